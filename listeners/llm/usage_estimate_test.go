package llm

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestUnreportedUsageIsEstimated: a server that reports no token usage (a
// compatible server's stream without a usage chunk, an Ollama reply without
// eval counts) is counted by estimate, so that the thread and agent budgets
// still stop a conversation; a reported usage is kept as it is.
func TestUnreportedUsageIsEstimated(t *testing.T) {
	answer := strings.Repeat("word ", 200) // 1000 bytes: about 250 tokens
	tests := []struct {
		name     string
		provider config.Provider
		reply    http.HandlerFunc
		want     Usage // zero: an estimate is wanted
	}{
		{"openai without usage", config.OpenAI, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"model": "m", "choices": []any{map[string]any{
				"message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop"}}})
		}, Usage{}},
		{"openai stream without a usage chunk", config.OpenAI, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"` + answer + `"},"finish_reason":"stop"}]}` +
				"\n\ndata: [DONE]\n\n"))
		}, Usage{}},
		{"ollama without eval counts", config.Ollama, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"model": "llama3.2", "message": map[string]any{"role": "assistant", "content": answer},
				"done": true})
		}, Usage{}},
		{"reported usage is kept", config.OpenAI, okReply(config.OpenAI, answer), Usage{11, 7, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			var estimated atomic.Bool
			r := NewRouter(RouterConfig{Backends: []*Backend{backendFor(t, tc.provider, "local", f)},
				OnCall: func(c CallRecord) { estimated.Store(c.UsageEstimated) }})
			req := Request{Messages: testMessages, Agent: "poet", Thread: "t1"}
			if strings.Contains(tc.name, "stream") {
				req.OnDelta = func(Delta) {}
			}
			if _, err := r.Chat(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := r.AgentUsage("poet")
			if tc.want != (Usage{}) {
				if diff := cmp.Diff(tc.want, got); diff != "" || estimated.Load() {
					t.Errorf("usage (-want +got):\n%s(estimated %v)", diff, estimated.Load())
				}
				return
			}
			if got.PromptTokens < inputTokens(req) || got.CompletionTokens < 250 || got.Requests != 1 || !estimated.Load() {
				t.Errorf("usage %+v (estimated %v), want about %d + 250 tokens, estimated", got, estimated.Load(), inputTokens(req))
			}
			budget := Budget{ThreadTokens: 200, OnExceed: config.ExceedStop}
			var warned atomic.Bool
			if reason := budget.check(r, "poet", "t1", &warned, r.log); !strings.Contains(reason, "thread token budget exhausted") {
				t.Errorf("a 200-token thread budget after %d tokens: %q, want it exhausted", got.Total(), reason)
			}
		})
	}
}
