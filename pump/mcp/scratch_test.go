package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

func TestScratchHeader(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	s.AddTool(&sdk.Tool{Name: "h", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a dot"}}}, nil
		})
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			r, err := next(ctx, method, req)
			if lr, ok := r.(*sdk.ListToolsResult); ok {
				for _, tl := range lr.Tools {
					tl.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "x-mcp-header": "bad header"}}}
				}
			}
			return r, err
		}
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "organism.yaml")
	os.WriteFile(path, []byte("organism: {name: remount}\nlisteners:\n  - name: ext\n    type: mcp\n    description: x\n    server: {url: "+srv.URL+", timeout: 10s}\n"), 0o600)
	o, err := organism.Load(path, organism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	t.Cleanup(b.Close)
	t.Log("bridge up")
}
