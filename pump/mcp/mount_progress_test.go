package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestMountedToolProgressReachesTheClient: a mounted MCP tool's progress
// notifications reach the MCP client that called it through the bridge
// with a progressToken, as the call's progress — its message, else how far
// it got — before the result.
func TestMountedToolProgressReachesTheClient(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	s.AddTool(&sdk.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no progress token"}}}, nil
			}
			for _, p := range []*sdk.ProgressNotificationParams{
				{ProgressToken: token, Message: "fetching", Progress: 1, Total: 3},
				{ProgressToken: token, Progress: 2, Total: 3},
				{ProgressToken: token, Progress: 7},
			} {
				if err := req.Session.NotifyProgress(ctx, p); err != nil {
					return nil, err
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		srv.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(`organism: {name: mount-progress}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+srv.URL+`, timeout: 20s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := organism.Load(path, organism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	b := New(o.Pump, Options{Timeout: time.Minute, Interim: o.WatchInterim})
	t.Cleanup(b.Close)
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	notes := make(chan string, 8)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			notes <- req.Params.Message
		}}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	p := &sdk.CallToolParams{Name: "ext.slow", Arguments: map[string]any{}}
	p.SetProgressToken("p1")
	r, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || text(r) != "done" {
		t.Fatalf("answer: isError %v %q", r.IsError, text(r))
	}
	var got []string
	for len(got) < 3 {
		select {
		case n := <-notes:
			got = append(got, n)
		case <-time.After(time.Minute):
			t.Fatalf("progress within a minute: %q, want 3 notifications", got)
		}
	}
	if diff := cmp.Diff([]string{"fetching", "ext.slow: 2 of 3", "ext.slow: 7"}, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}
