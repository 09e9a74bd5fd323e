package organism

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// stepModel is a loopback OpenAI-protocol server answering its n-th
// request with steps[n] (the last repeats): a message, or nil for a request
// that blocks until its connection is closed (at most 20 s). It keeps the
// messages of every request and tells hung when one blocks.
type stepModel struct {
	*httptest.Server
	steps []map[string]any
	hung  chan struct{}
	mu    sync.Mutex
	reqs  [][]any
}

func newStepModel(t *testing.T, steps ...map[string]any) *stepModel {
	m := &stepModel{steps: steps, hung: make(chan struct{}, len(steps))}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []any `json:"messages"`
		}
		_ = json.Unmarshal(b, &body)
		m.mu.Lock()
		n := len(m.reqs)
		m.reqs = append(m.reqs, body.Messages)
		m.mu.Unlock()
		msg := m.steps[min(n, len(m.steps)-1)]
		if msg == nil {
			m.hung <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		finish := "stop"
		if msg["tool_calls"] != nil {
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg,
			"finish_reason": finish}}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *stepModel) requests() [][]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]any(nil), m.reqs...)
}

// TestHaltOfAModelCallLeavesNoTrace: an emergency halt while an agent's
// model request runs holds the turn — the log says so (never "agent
// halted"), no answer goes out, nothing is added to the conversation's
// history — and after the resume the message is handled as if for the
// first time: the model gets the very request the halt interrupted, and
// the caller gets the model's answer, alone. Whether the halted turn was
// asked by a new message or by a tool's result.
func TestHaltOfAModelCallLeavesNoTrace(t *testing.T) {
	text := func(s string) map[string]any { return map[string]any{"role": "assistant", "content": s} }
	callCalculate := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": "call_6x7", "type": "function", "function": map[string]any{"name": "calculate",
			"arguments": `{"Expression":"6*7"}`}}}}
	cases := []struct {
		name  string
		steps []map[string]any
	}{
		{name: "new message", steps: []map[string]any{nil, text("answered after the halt")}},
		{name: "tool result", steps: []map[string]any{callCalculate, nil, text("answered after the halt")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			h := signalHandler{Handler: slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
				want: "handling halted: the message waits for unhalt", seen: make(chan string, 1)}
			m := newStepModel(t, tc.steps...)
			o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, `listeners:
  - name: thinker
    agent: true
    description: Thinks slowly
    prompt: You are thinker.
    tools: [calculate]
`, Options{Logger: slog.New(h)})
			c := startConversation(t, o, "thinker", "what is 6*7?")
			select {
			case <-m.hung:
			case <-time.After(30 * time.Second):
				t.Fatal("the model request never hung")
			}
			if _, err := o.Governance().Halt("test", pump.HaltAgents); err != nil {
				t.Fatal(err)
			}
			select {
			case <-h.seen: // the handling ended, its message back in the queue
			case <-time.After(30 * time.Second):
				t.Fatalf("the halted handling did not end:\n%s", logs.String())
			}
			if out := logs.String(); strings.Contains(out, "agent halted") ||
				!strings.Contains(out, "agent's turn held by the halt") {
				t.Errorf("log of a halted turn:\n%s", out)
			}
			tc, ok := o.ThreadContext(c.id)
			if !ok {
				t.Fatalf("no history of thread %s", c.id)
			}
			for _, s := range tc.Slots() {
				if strings.HasPrefix(s.PayloadType, "llm.") && s.PayloadType != "llm.calls" && s.PayloadType != "llm.result" {
					t.Errorf("the halt left a trace in the history: %s %s", s.PayloadType, s.Raw)
				}
			}
			if !o.Governance().Resume("test") {
				t.Fatal("Resume: no halt in force")
			}
			if text := c.answer(t); text != "answered after the halt" {
				t.Fatalf("answer %q", text)
			}
			reqs := m.requests()
			if len(reqs) < 2 {
				t.Fatalf("%d model requests", len(reqs))
			}
			if diff := cmp.Diff(reqs[len(reqs)-2], reqs[len(reqs)-1]); diff != "" {
				t.Errorf("the request after the resume differs from the one the halt interrupted (-halted +after):\n%s", diff)
			}
			select {
			case e := <-c.replies:
				t.Errorf("a second reply: %s %v", e.Kind, e.Payload)
			default:
			}
		})
	}
}
