package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// TestInterimTextIsProgress: an agent's interim text reaches an MCP
// client as a progress notification of its call — before the call's
// result — when the call carries a progressToken, and not otherwise.
func TestInterimTextIsProgress(t *testing.T) {
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
	b := New(o.Pump, Options{Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler), Interim: o.WatchInterim})

	var mu sync.Mutex
	var got []*sdk.ProgressNotificationParams
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
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
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

	for _, withToken := range []bool{true, false} {
		mu.Lock()
		got = nil
		mu.Unlock()
		p := &sdk.CallToolParams{Name: "mathbot", Arguments: map[string]any{"Text": "what is 6*7?"}}
		if withToken {
			p.SetProgressToken("call-1")
		}
		r, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.IsError || text(r) != "42" {
			t.Fatalf("answer: isError %v %q", r.IsError, text(r))
		}
		mu.Lock()
		notes := got
		mu.Unlock()
		switch {
		case withToken && (len(notes) != 1 || notes[0].Message != "Let me compute that." ||
			notes[0].ProgressToken != "call-1" || notes[0].Progress != 1):
			t.Errorf("progress before the result: %+v, want one with the interim text", notes)
		case !withToken && len(notes) != 0:
			t.Errorf("progress without a progressToken: %+v", notes)
		}
	}
}
