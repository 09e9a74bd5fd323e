package organism

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// modelTurn is what a wireModel answers one request with: text, tool calls
// or both.
type modelTurn struct {
	text  string
	calls []scriptedCall
}

// say is a turn answering text.
func say(text string) modelTurn { return modelTurn{text: text} }

// call is a turn making tool calls.
func call(c ...scriptedCall) modelTurn { return modelTurn{calls: c} }

// wireModel is a loopback model server speaking one provider's protocol
// (openai chat completions, anthropic messages or ollama chat). Its n-th
// request (from 0) is answered by script(n, body); every request body is
// kept for the test to check what the agent sent.
type wireModel struct {
	*httptest.Server
	t        *testing.T
	provider config.Provider
	script   func(n int, body map[string]any) modelTurn
	mu       sync.Mutex
	bodies   []map[string]any
}

func newWireModel(t *testing.T, p config.Provider, script func(n int, body map[string]any) modelTurn) *wireModel {
	m := &wireModel{t: t, provider: p, script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// scripted is a wireModel answering its n-th request with turns[n] (the
// last one repeats).
func scripted(t *testing.T, p config.Provider, turns ...modelTurn) *wireModel {
	return newWireModel(t, p, func(n int, _ map[string]any) modelTurn { return turns[min(n, len(turns)-1)] })
}

func (m *wireModel) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		m.t.Errorf("model request is not JSON: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	n := len(m.bodies)
	m.bodies = append(m.bodies, body)
	m.mu.Unlock()
	turn := m.script(n, body)
	w.Header().Set("Content-Type", "application/json")
	var reply any
	switch m.provider {
	case config.Anthropic:
		var blocks []any
		if turn.text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": turn.text})
		}
		for _, c := range turn.calls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name,
				"input": json.RawMessage(c.Arguments)})
		}
		stop := "end_turn"
		if len(turn.calls) > 0 {
			stop = "tool_use"
		}
		reply = map[string]any{"type": "message", "model": "claude-test", "content": blocks, "stop_reason": stop,
			"usage": map[string]any{"input_tokens": 11, "output_tokens": 7}}
	case config.Ollama:
		msg := map[string]any{"role": "assistant", "content": turn.text}
		var tcs []any
		for _, c := range turn.calls {
			tcs = append(tcs, map[string]any{"function": map[string]any{"name": c.Name, "arguments": json.RawMessage(c.Arguments)}})
		}
		if tcs != nil {
			msg["tool_calls"] = tcs
		}
		reply = map[string]any{"model": "llama-test", "message": msg, "done": true, "done_reason": "stop",
			"prompt_eval_count": 11, "eval_count": 7}
	default:
		msg := map[string]any{"role": "assistant", "content": turn.text}
		finish := "stop"
		if len(turn.calls) > 0 {
			var tcs []any
			for _, c := range turn.calls {
				tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			}
			msg["tool_calls"], finish = tcs, "tool_calls"
			if turn.text == "" {
				msg["content"] = nil
			}
		}
		reply = map[string]any{"model": "gpt-test", "choices": []any{map[string]any{"message": msg, "finish_reason": finish}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}}
	}
	_ = json.NewEncoder(w).Encode(reply)
}

// requests returns the request bodies so far.
func (m *wireModel) requests() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.bodies...)
}

// messages returns the messages of a request body.
func messages(body map[string]any) []map[string]any {
	raw, _ := body["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// jsonOf renders v for a failure message or a substring check.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// wireOrganism starts an organism whose one backend is m, with the given
// listeners section (and any other top-level YAML before it).
func wireOrganism(t *testing.T, m *wireModel, yaml string) *Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	model := map[config.Provider]string{config.Anthropic: "claude-test", config.Ollama: "llama-test"}[m.provider]
	if model == "" {
		model = "gpt-test"
	}
	doc := fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - provider: %s
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: %s
%s`, m.provider, m.URL, model, yaml)
	cfg, err := config.Parse("organism.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return startConfigured(t, cfg, Options{})
}

// toolMessages returns the openai tool messages of a request: tool_call_id
// → content.
func toolMessages(body map[string]any) map[string]string {
	out := map[string]string{}
	for _, m := range messages(body) {
		if m["role"] == "tool" {
			id, _ := m["tool_call_id"].(string)
			c, _ := m["content"].(string)
			out[id] = c
		}
	}
	return out
}

// lastUser returns the content of the last user message of an openai
// request.
func lastUser(body map[string]any) string {
	ms := messages(body)
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i]["role"] == "user" {
			c, _ := ms[i]["content"].(string)
			return c
		}
	}
	return ""
}

// hasText reports whether any message of body holds s.
func hasText(body map[string]any, s string) bool {
	return strings.Contains(jsonOf(body["messages"]), s)
}
