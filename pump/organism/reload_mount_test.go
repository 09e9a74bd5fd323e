package organism

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReloadRemountsAChangedToolList: an external MCP server that changes
// its tool list (notifications/tools/list_changed) gets its new list
// mounted by the next reload, although its entry is unchanged: the tool it
// added becomes a listener, the one it removed goes.
func TestReloadRemountsAChangedToolList(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	empty := map[string]any{"type": "object"}
	answer := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	}
	s.AddTool(&sdk.Tool{Name: "old", InputSchema: empty}, answer)
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		srv.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	doc := `organism: {name: reload-mcp-list}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: ` + srv.URL + `, timeout: 10s}
`
	dir := t.TempDir()
	o := reloadOrganism(t, dir, doc)
	if _, ok := o.Pump.Lookup("ext.old"); !ok {
		t.Fatal("ext.old not mounted")
	}
	s.AddTool(&sdk.Tool{Name: "new", InputSchema: empty}, answer)
	s.RemoveTools("old")
	// The notification reaches the mount in its own time: reload until
	// the new list is mounted.
	deadline := time.Now().Add(time.Minute)
	for {
		report, err := o.Reload(parseIn(t, dir, doc))
		if err != nil {
			t.Fatal(err)
		}
		_, added := o.Pump.Lookup("ext.new")
		_, kept := o.Pump.Lookup("ext.old")
		if added && !kept {
			if !slices.Equal(report.Changed, []string{"ext"}) {
				t.Errorf("reload report %+v, want ext changed", report)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute of reloads: ext.new mounted %v, ext.old still mounted %v (last report %+v)",
				added, kept, report)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
