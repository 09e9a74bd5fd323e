package bus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestInjectToldHistoryGone: a client that only injects (REST, or the
// /api/v1/ws stream's inject command) and polls continues a conversation
// whose history max_threads evicted: the inject's answer carries the note
// that the agent's earlier history is gone, and why — once, at the
// continuation that begins the history again.
func TestInjectToldHistoryGone(t *testing.T) {
	for _, surface := range []string{"rest", "stream"} {
		t.Run(surface, func(t *testing.T) {
			m := llmtest.NewChatModel(t, answerChunks)
			f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) {
				cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
platform: {context_buffer: {max_threads: 2}}
llm:
  retries: 0
  backends:
    - provider: openai
      name: local
      base_url: `+m.URL+`
      model: test-model
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
`))
				if err != nil {
					return nil, err
				}
				return organism.New(cfg, o)
			})
			token := f.loginAs("alice", auth.Operator)
			send := func(req map[string]any) map[string]any {
				status, body, _ := f.do("POST", "/api/v1/inject", token, req)
				if status != 200 {
					t.Fatalf("inject %v: %d %v", req, status, body)
				}
				return body
			}
			if surface == "stream" {
				stream := f.dial("/api/v1/ws", token)
				readFrame(t, stream) // connected
				send = func(req map[string]any) map[string]any {
					cmd := frame{"cmd": "inject"}
					for k, v := range req {
						cmd[k] = v
					}
					writeFrame(t, stream, cmd)
					for {
						got := readFrame(t, stream)
						if got["event"] == "injected" {
							return got
						}
						if _, published := got["kind"]; got["event"] == "error" && !published {
							t.Fatalf("inject %v: %v", req, got)
						}
					}
				}
			}
			// inject sends text to poet (on thread when set), waits for
			// the model's answer to it, and returns the inject's answer.
			inject := func(thread, text string) map[string]any {
				t.Helper()
				req := map[string]any{"to": "poet", "payload": map[string]any{"text": text}}
				if thread != "" {
					req["thread_id"] = thread
				}
				n := m.Count()
				body := send(req)
				deadline := time.Now().Add(waitTimeout)
				for m.Count() == n {
					if time.Now().After(deadline) {
						t.Fatalf("inject %q: the model was not asked", text)
					}
					time.Sleep(10 * time.Millisecond)
				}
				return body
			}
			first := inject("", "my name is Dan")
			thread, _ := first["thread_id"].(string)
			if _, ok := first["notice"]; ok {
				t.Errorf("a new conversation's inject carries a notice: %v", first)
			}
			// Two more once it is evicted: the notes waiting are then as
			// many as the histories kept, and the continuation evicts one
			// more.
			for i, more := 0, 2; more > 0; i++ {
				if i == 10 {
					t.Fatal("10 other conversations did not evict the first one's history")
				}
				inject("", fmt.Sprintf("other %d", i))
				if _, ok := f.org.ThreadContext(thread); !ok {
					more--
				}
			}
			want := "[the earlier history of this conversation was dropped (the organism keeps the history of " +
				"at most 2 threads, platform.context_buffer.max_threads): poet does not remember it]"
			// A poller reads the thread's messages: before the
			// continuation the note waits (no since_seq), after it the
			// answer says the agent's memory begins at the continuation.
			gone := func() map[string]any {
				t.Helper()
				status, body, _ := f.do("GET", "/api/v1/threads/"+thread+"/messages?limit=1000", token, nil)
				if status != 200 {
					t.Fatalf("messages: %d %v", status, body)
				}
				g, _ := body["history_gone"].(map[string]any)
				return g
			}
			if g := gone(); g == nil || g["notice"] != want || g["reason"] != "evicted" || g["since_seq"] != nil {
				t.Errorf("messages before the continuation: history_gone %v, want the pending note %q", g, want)
			}
			cont := inject(thread, "what is my name?")
			if cont["notice"] != want {
				t.Errorf("continuation's inject: notice %v, want %q", cont["notice"], want)
			}
			_, body, _ := f.do("GET", "/api/v1/threads/"+thread+"/messages?limit=1000", token, nil)
			var contSeq any
			for _, m := range body["messages"].([]any) {
				if m := m.(map[string]any); m["id"] == cont["message_id"] {
					contSeq = m["seq"]
				}
			}
			if g, _ := body["history_gone"].(map[string]any); g == nil || g["notice"] != want || contSeq == nil ||
				g["since_seq"] != contSeq {
				t.Errorf("messages after the continuation (seq %v): history_gone %v, want %q since it", contSeq, g, want)
			}
			if got := inject(thread, "and now?"); got["notice"] != nil {
				t.Errorf("second continuation's inject: notice %v, want none (told once)", got["notice"])
			}
			if last := m.Request(t, m.Count()-1); !strings.Contains(fmt.Sprint(last), "was dropped") {
				t.Error("the model is not told that the earlier history was dropped")
			}
		})
	}
}
