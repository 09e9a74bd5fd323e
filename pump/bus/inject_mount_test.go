package bus

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestInjectIntoMountedTool: a REST inject into a mounted MCP tool reaches
// the external server exactly as given — an optional 0 or false is sent,
// arrays and objects are native JSON.
func TestInjectIntoMountedTool(t *testing.T) {
	var (
		mu  sync.Mutex
		got = make(chan json.RawMessage, 4)
	)
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	var schema map[string]any
	if err := json.Unmarshal([]byte(`{"type":"object","required":["query"],"properties":{
		"query":{"type":"string"},"limit":{"type":"integer","default":10},"exact":{"type":"boolean","default":true},
		"tags":{"type":"array","items":{"type":"string"}},"filter":{"type":"object"}}}`), &schema); err != nil {
		t.Fatal(err)
	}
	s.AddTool(&sdk.Tool{Name: "search", InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		got <- append(json.RawMessage(nil), req.Params.Arguments...)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close) // after the organism's shutdown (cleanups run last first): it holds a session open
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(`organism: {name: rest-mount}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+srv.URL+`, timeout: 10s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	op := f.tokens()[auth.Operator]
	status, body, _ := f.do("POST", "/api/v1/inject", op, map[string]any{"to": "ext.search",
		"payload": map[string]any{"query": "q", "limit": 0, "exact": false, "tags": []string{"a", "b"},
			"filter": map[string]any{"k": []any{1, true}}}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, body)
	}
	select {
	case args := <-got:
		var g, w any
		_ = json.Unmarshal(args, &g)
		_ = json.Unmarshal([]byte(`{"query":"q","limit":0,"exact":false,"tags":["a","b"],"filter":{"k":[1,true]}}`), &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("the server got %s (-want +got):\n%s", args, diff)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the external tool was not called")
	}
	// A value of the wrong type is refused, naming the field.
	status, body, _ = f.do("POST", "/api/v1/inject", op, map[string]any{"to": "ext.search",
		"payload": map[string]any{"query": "q", "limit": "5"}})
	if status != 400 || body["error"] != `Invalid payload for ext.search: limit: want an integer, got the string "5"` {
		t.Fatalf("coerced: %d %v", status, body)
	}
}
