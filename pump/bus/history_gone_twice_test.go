package bus

import (
	"fmt"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestHistoryGoneTwice: a conversation whose agent's history was removed,
// begun again by a continuation and removed again reports both removals
// to a poller of its messages: history_gone is the latest, its "earlier"
// the one before, with the seq of the continuation that began the history
// between them — unless the poller's ?after= cursor is past that seq (it
// read on from there: it was told then).
func TestHistoryGoneTwice(t *testing.T) {
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
	inject := func(thread, text string) map[string]any {
		t.Helper()
		req := map[string]any{"to": "poet", "payload": map[string]any{"text": text}}
		if thread != "" {
			req["thread_id"] = thread
		}
		n := m.Count()
		status, body, _ := f.do("POST", "/api/v1/inject", token, req)
		if status != 200 {
			t.Fatalf("inject %v: %d %v", req, status, body)
		}
		for deadline := time.Now().Add(time.Minute); m.Count() == n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("inject %q: the model was not asked", text)
			}
		}
		return body
	}
	others := 0
	evict := func(thread string) {
		t.Helper()
		for more, tries := 2, 0; more > 0; tries++ {
			if tries == 10 {
				t.Fatal("10 other conversations did not evict the conversation's history")
			}
			inject("", fmt.Sprintf("other %d", others))
			others++
			if _, ok := f.org.ThreadContext(thread); !ok {
				more--
			}
		}
	}
	messages := func(thread, query string) map[string]any {
		t.Helper()
		status, body, _ := f.do("GET", "/api/v1/threads/"+thread+"/messages?limit=1000"+query, token, nil)
		if status != 200 {
			t.Fatalf("messages: %d %v", status, body)
		}
		return body
	}

	first := inject("", "my name is Dan")
	thread, _ := first["thread_id"].(string)
	evict(thread)
	cont := inject(thread, "what is my name?")
	var contSeq float64
	for _, msg := range messages(thread, "")["messages"].([]any) {
		if msg := msg.(map[string]any); msg["id"] == cont["message_id"] {
			contSeq, _ = msg["seq"].(float64)
		}
	}
	if contSeq == 0 {
		t.Fatalf("the continuation %v is not among the messages", cont["message_id"])
	}
	evict(thread)

	g, _ := messages(thread, "")["history_gone"].(map[string]any)
	if g == nil || g["reason"] != "evicted" || g["since_seq"] != nil {
		t.Fatalf("history_gone %v, want the pending note of the second removal", g)
	}
	earlier, _ := g["earlier"].([]any)
	if len(earlier) != 1 {
		t.Fatalf("history_gone.earlier %v, want the first removal", g["earlier"])
	}
	if e := earlier[0].(map[string]any); e["reason"] != "evicted" || e["since_seq"] != contSeq ||
		e["notice"] != g["notice"] || e["removed"] == g["removed"] {
		t.Errorf("the first removal %v, want evicted, since the continuation (seq %v)", e, contSeq)
	}
	if g, _ := messages(thread, fmt.Sprintf("&after=%d", int64(contSeq)))["history_gone"].(map[string]any); g == nil ||
		g["earlier"] != nil {
		t.Errorf("after the continuation: history_gone %v, want the latest removal alone", g)
	}
}
