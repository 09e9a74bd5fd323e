package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// interimModel answers as mathbot: a call of calculate with "Let me
// compute that." beside it, then, once the tool's result is in, "42".
func interimModel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		msg := map[string]any{"role": "assistant", "content": "42"}
		finish := "stop"
		if !strings.Contains(string(b), `"role":"tool"`) {
			msg = map[string]any{"role": "assistant", "content": "Let me compute that.", "tool_calls": []any{
				map[string]any{"id": "c1", "type": "function", "function": map[string]any{
					"name": "calculate", "arguments": `{"Expression":"6*7"}`}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test", "choices": []any{map[string]any{
			"message": msg, "finish_reason": finish}}, "usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// progressOrganism starts an organism whose mathbot's model is
// interimModel, shut down when the test ends.
func progressOrganism(t *testing.T) *organism.Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", fmt.Appendf(nil, `organism: {name: mcp-progress}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: mathbot
    agent: true
    description: Computes
    prompt: You are mathbot.
    tools: [calculate]
`, interimModel(t).URL))
	if err != nil {
		t.Fatal(err)
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return o
}

// TestInterimTextIsProgress: an agent's interim text reaches an MCP
// client as a progress notification of its call when the call carries a
// progressToken, and not otherwise.
func TestInterimTextIsProgress(t *testing.T) {
	o := progressOrganism(t)
	b := New(o.Pump, Options{Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler), Interim: o.WatchInterim})

	// The SDK client runs its notification handler on a goroutine of its
	// own: a notification is waited for, not looked for once the call
	// returned (TestProgressPrecedesTheResult checks the order on the wire).
	notes := make(chan *sdk.ProgressNotificationParams, 8)
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ss.Wait() }()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			notes <- req.Params
		}})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-served
		cancel()
		b.Close()
	})

	// Without a token first: had it been sent a notification, that one
	// would be handled before the next call's (the client's handler queue
	// is in order).
	for _, token := range []string{"", "call-1"} {
		p := &sdk.CallToolParams{Name: "mathbot", Arguments: map[string]any{"Text": "what is 6*7?"}}
		if token != "" {
			p.SetProgressToken(token)
		}
		r, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.IsError || text(r) != "42" {
			t.Fatalf("answer: isError %v %q", r.IsError, text(r))
		}
	}
	select {
	case n := <-notes:
		if n.ProgressToken != "call-1" || n.Message != "Let me compute that." || n.Progress != 1 {
			t.Errorf("progress %+v, want call-1's, with the interim text", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("no progress notification within a minute")
	}
}

// TestProgressPrecedesTheResult: on the wire (stdio), the call's progress
// notification comes before its result.
func TestProgressPrecedesTheResult(t *testing.T) {
	o := progressOrganism(t)
	b := New(o.Pump, Options{Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler), Interim: o.WatchInterim})
	defer b.Close()
	s := serveSession(t, b, StdioOptions{})
	s.send(fmt.Sprintf(initLine, "2025-06-18"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.next() // initialize's result
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mathbot",` +
		`"arguments":{"Text":"what is 6*7?"},"_meta":{"progressToken":"p2"}}}`)
	var methods []string
	for {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProgressToken string `json:"progressToken"`
				Message       string `json:"message"`
			} `json:"params"`
		}
		line := s.next()
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if m.Method == "notifications/progress" {
			if m.Params.ProgressToken != "p2" || m.Params.Message != "Let me compute that." {
				t.Errorf("progress %s", line)
			}
		}
		if m.Method != "" {
			methods = append(methods, m.Method)
			continue
		}
		if string(m.ID) == "2" {
			methods = append(methods, "result")
			break
		}
	}
	if want := []string{"notifications/progress", "result"}; !slices.Equal(methods, want) {
		t.Errorf("the server wrote %v, want %v", methods, want)
	}
}
