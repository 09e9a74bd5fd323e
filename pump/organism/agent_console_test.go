package organism_test

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

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// lockedBuffer is an io.Writer the console may write from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestYAMLAgentNativeToolCallToConsole: a YAML-only agent with tools:
// [calculate] against a loopback OpenAI-style server. The first request
// offers calculate as a function and is answered with a tool call; the
// second carries the tool's result as a role:tool message bound to the
// call's id, with 42 in it; the model's final text, markup and all,
// reaches the in-process console byte for byte. A second @mathbot line
// continues the conversation: the third request holds the first exchange.
func TestYAMLAgentNativeToolCallToConsole(t *testing.T) {
	const answer = "In HTML you would write <b>rain</b>."
	var (
		mu       sync.Mutex
		requests []map[string]any
		problems []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil || r.URL.Path != "/chat/completions" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		n := len(requests)
		requests = append(requests, body)
		mu.Unlock()
		var msg map[string]any
		finish := "stop"
		switch n {
		case 0:
			tools, _ := json.Marshal(body["tools"])
			if !strings.Contains(string(tools), `"name":"calculate"`) {
				mu.Lock()
				problems = append(problems, "first request offers no calculate function: "+string(tools))
				mu.Unlock()
			}
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_6x7", "type": "function",
				"function": map[string]any{"name": "calculate", "arguments": `{"Expression":"6*7"}`}}}}
			finish = "tool_calls"
		case 2:
			var asked, answered bool
			for _, raw := range body["messages"].([]any) {
				m := raw.(map[string]any)
				content := fmt.Sprint(m["content"])
				asked = asked || m["role"] == "user" && strings.Contains(content, "what is 6*7?")
				answered = answered || m["role"] == "assistant" && content == answer
			}
			if !asked || !answered {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("the follow-up request lacks the first exchange: %v", body["messages"]))
				mu.Unlock()
			}
			msg = map[string]any{"role": "assistant", "content": "Still 42."}
		default:
			found := false
			for _, raw := range body["messages"].([]any) {
				m := raw.(map[string]any)
				if m["role"] == "tool" && m["tool_call_id"] == "call_6x7" && strings.Contains(fmt.Sprint(m["content"]), "42") {
					found = true
				}
			}
			if !found {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("second request has no tool message for call_6x7 with 42: %v", body["messages"]))
				mu.Unlock()
			}
			msg = map[string]any{"role": "assistant", "content": answer}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test", "choices": []any{map[string]any{
			"message": msg, "finish_reason": finish}}, "usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	defer srv.Close()

	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: console-agent}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tools: [calculate]
`, srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	local, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.New(cfg, o) })
	if err != nil {
		t.Fatal(err)
	}
	o := local.Organism()
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	c, err := console.New(local, console.Config{ReplyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	if err := c.Run(context.Background(), strings.NewReader("@mathbot what is 6*7?\n@mathbot and again?\n/quit\n"), out); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	if len(requests) != 3 {
		t.Errorf("%d model requests, want 3", len(requests))
	}
	if !strings.Contains(out.String(), "[mathbot] "+answer+"\n") {
		t.Errorf("the answer did not reach the console byte for byte:\n%s", out)
	}
	if !strings.Contains(out.String(), "[mathbot] Still 42.\n") {
		t.Errorf("the follow-up's answer did not reach the console:\n%s", out)
	}
}
