package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

const testOrganism = `organism: {name: mcp-test}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greeting agent - forwards to shouter
    agent: true
    peers: [shouter]
    tools: [calculate]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints responses to console
`

// connect starts the organism (durable in data), serves it over in-memory
// MCP transports and returns a client session.
func connect(t *testing.T, data string) (*sdk.ClientSession, *organism.Organism) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(testOrganism), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := organism.Load(path, organism.Options{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	serverDone := make(chan error, 1)
	server := b.Server()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { serverDone <- ss.Wait() }()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-serverDone
		cancel()
		b.Close()
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return cs, o
}

func text(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestBridge(t *testing.T) {
	data := t.TempDir()
	cs, _ := connect(t, data)
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	for _, want := range []string{"greeter", "shouter", "response-handler", "calculate"} {
		if byName[want] == nil {
			t.Fatalf("no tool %s in %v", want, tools.Tools)
		}
	}
	for name := range byName {
		if strings.HasPrefix(name, "system.") {
			t.Fatalf("system listener %s served", name)
		}
	}
	schema, _ := json.Marshal(byName["calculate"].InputSchema)
	if !strings.Contains(string(schema), `"Expression":{"description":`) || !strings.Contains(string(schema), `"required":["Expression"]`) {
		t.Fatalf("calculate schema: %s", schema)
	}

	call := func(name string, args any) *sdk.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	// hello-world: the conversation's final answer.
	if r := call("greeter", map[string]any{"Name": "Dan"}); r.IsError || text(r) != "HELLO, DAN!" {
		t.Fatalf("greeter: error=%v %q", r.IsError, text(r))
	}
	// calculate answers the caller.
	r := call("calculate", map[string]any{"Expression": "2 ** 10"})
	if r.IsError || !strings.Contains(text(r), "<Value>1024</Value>") {
		t.Fatalf("calculate: error=%v %q", r.IsError, text(r))
	}
	if sc, _ := json.Marshal(r.StructuredContent); !strings.Contains(string(sc), `"Value":"1024"`) {
		t.Fatalf("structured: %s", sc)
	}
	// Bad calls are tool errors.
	bad := []struct {
		name string
		args any
		want string
	}{
		{"calculate", map[string]any{"Expression": "1/0"}, "division by zero"},
		{"calculate", map[string]any{"Expr": "1"}, `unknown field "Expr" (the fields are Expression)`},
		{"calculate", map[string]any{}, "Expression: missing (required, want a string)"},
		{"calculate", map[string]any{"Expression": []any{"x"}}, "Expression: want a string, got an array"},
		{"greeter", map[string]any{"Name": 5}, "invalid arguments for greeter: Name: want a string, got the number 5"},
	}
	for _, tc := range bad {
		r := call(tc.name, tc.args)
		if !r.IsError || !strings.Contains(text(r), tc.want) {
			t.Errorf("%s %v: error=%v %q, want %q", tc.name, tc.args, r.IsError, text(r), tc.want)
		}
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil {
		t.Error("unknown tool: no error")
	}

	// The calls went through the pump: the journal has them.
	cs.Close()
	rd, err := store.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	entries, err := rd.Tail(200)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.From == "mcp" && strings.EqualFold(e.To, "calculate") && strings.Contains(string(e.Bytes), "2 ** 10") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no journal entry of the calculate call among %d entries", len(entries))
	}
}

// TestBridgeStreamableHTTP serves the same tools over streamable HTTP.
func TestBridgeStreamableHTTP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(testOrganism), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := organism.Load(path, organism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	defer b.Close()
	server := b.Server()
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer srv.Close()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "http-client", Version: "v0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"Expression": "max(3, 9) * 2"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || !strings.Contains(text(r), "<Value>18</Value>") {
		t.Fatalf("calculate over HTTP: %v %q", r.IsError, text(r))
	}
}

// TestBridgeProfile: a bridge serving under a profile offers only the
// listeners the profile reaches — the others are not tools at all, and a
// call naming one is refused as a call to a tool that does not exist —
// and its calls' conversations run under the profile.
func TestBridgeProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(`organism: {name: mcp-profiled}
profiles:
  calc: {listeners: [calculate]}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: Greets}
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
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
	b := New(o.Pump, Options{Timeout: 20 * time.Second, Profile: "calc"})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-serverDone
		cancel()
		b.Close()
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "calculate") || slices.Contains(names, "greeter") {
		t.Fatalf("tools under calc: %v, want calculate and no greeter", names)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"Expression": "6 * 7"}})
	if err != nil || r.IsError || !strings.Contains(text(r), "42") {
		t.Fatalf("calculate: %v %+v", err, r)
	}
	_, errMasked := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greeter", Arguments: map[string]any{"Name": "Ann"}})
	_, errNone := cs.CallTool(ctx, &sdk.CallToolParams{Name: "no-such-tool", Arguments: map[string]any{"Name": "Ann"}})
	if errMasked == nil || errNone == nil ||
		strings.ReplaceAll(errMasked.Error(), "greeter", "X") != strings.ReplaceAll(errNone.Error(), "no-such-tool", "X") {
		t.Errorf("call to the masked greeter: %v; to a tool that does not exist: %v", errMasked, errNone)
	}
}
