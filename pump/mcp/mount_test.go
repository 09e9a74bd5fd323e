package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestMountReExported: a mounted MCP server's tools served again by the
// bridge keep their schema keywords (default, minItems, nullable), take
// arguments exactly as sent (limit 0, exact false, native arrays and
// objects), refuse what the schema refuses, and give image results back as
// images.
func TestMountReExported(t *testing.T) {
	got := make(chan json.RawMessage, 8)
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	var schema map[string]any
	if err := json.Unmarshal([]byte(`{"type":"object","required":["query","tags"],"properties":{
		"query":{"type":"string"},
		"limit":{"type":"integer","default":10,"minimum":0},
		"exact":{"type":"boolean","default":true},
		"since":{"type":["string","null"]},
		"tags":{"type":"array","items":{"type":"string"},"minItems":1},
		"filter":{"type":"object"}}}`), &schema); err != nil {
		t.Fatal(err)
	}
	s.AddTool(&sdk.Tool{Name: "search", InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		got <- append(json.RawMessage(nil), req.Params.Arguments...)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "picture", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a dot"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte("PNG!")}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close) // after the organism, which holds a session open
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(`organism: {name: remount}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+srv.URL+`, timeout: 10s}
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
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	t.Cleanup(b.Close)
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var offered map[string]any
	for _, tool := range tools.Tools {
		if tool.Name == "ext.search" {
			b, _ := json.Marshal(tool.InputSchema)
			_ = json.Unmarshal(b, &offered)
		}
	}
	if offered == nil {
		t.Fatalf("ext.search not offered: %v", tools.Tools)
	}
	props := offered["properties"].(map[string]any)
	for name, want := range schema["properties"].(map[string]any) {
		if diff := cmp.Diff(want, props[name]); diff != "" {
			t.Errorf("%s offered differently (-server +offered):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff(schema["required"], offered["required"]); diff != "" {
		t.Errorf("required (-server +offered):\n%s", diff)
	}

	callTool := func(name string, args string) *sdk.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := callTool("ext.search", `{"query":"q","limit":0,"exact":false,"since":null,"tags":["a"],"filter":{"k":[1,{"x":null}]}}`)
	if r.IsError || text(r) != "found" {
		t.Fatalf("search: %v %q", r.IsError, text(r))
	}
	select {
	case args := <-got:
		var g, w any
		_ = json.Unmarshal(args, &g)
		_ = json.Unmarshal([]byte(`{"query":"q","limit":0,"exact":false,"tags":["a"],"filter":{"k":[1,{"x":null}]}}`), &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("the server got %s (-want +got):\n%s", args, diff)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the external tool was not called")
	}
	for args, want := range map[string]string{
		`{"query":"q","tags":[]}`:                 "/properties/tags: minItems",
		`{"query":"q","tags":["a"],"limit":-1}`:   "/properties/limit: minimum",
		`{"query":"q","tags":["a"],"limit":"5"}`:  `limit: want an integer, got the string "5"`,
		`{"query":"q","tags":["a"],"filter":"x"}`: "/properties/filter: type",
	} {
		if r := callTool("ext.search", args); !r.IsError || !strings.Contains(text(r), want) {
			t.Errorf("%s: %v %q, want %q", args, r.IsError, text(r), want)
		}
	}
	select {
	case args := <-got:
		t.Fatalf("a refused call reached the server: %s", args)
	default:
	}
	r = callTool("ext.picture", `{}`)
	var img *sdk.ImageContent
	for _, c := range r.Content {
		if i, ok := c.(*sdk.ImageContent); ok {
			img = i
		}
	}
	if r.IsError || text(r) != "a dot" || img == nil || img.MIMEType != "image/png" || string(img.Data) != "PNG!" {
		t.Fatalf("picture: %+v", r.Content)
	}
}
