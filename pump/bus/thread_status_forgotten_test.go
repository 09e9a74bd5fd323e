package bus

import (
	"net/http"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestForgottenFailureStreamsError: the stream remembers the failed
// conversations in a bounded memory (here of one). A conversation it forgot
// — another failed since — and that its owner continued to an answer that
// went well ends with thread_updated reading error, as GET
// /api/v1/threads/{id} reads it (a failure stays the conversation's): the
// stream asks the journal what it no longer remembers.
func TestForgottenFailureStreamsError(t *testing.T) {
	f := prepareFixtureWith(t, leakyOrganism(make(chan string)))
	f.beforeServe = func(s *Server) { s.turns.limit = 1 }
	f.start(f.opts)
	tokens := f.tokens()
	op, viewer := tokens[auth.Operator], tokens[auth.Viewer]
	stream := f.dial("/api/v1/ws", viewer)
	readEvent(t, stream, "connected")
	completed := f.watchCompletions()
	inject := func(thread, note string) string {
		t.Helper()
		body := map[string]any{"to": "leaky", "payload": map[string]string{"note": note}}
		if thread != "" {
			body["thread_id"] = thread
		}
		status, got, _ := f.do(http.MethodPost, "/api/v1/inject", op, body)
		if status != http.StatusOK {
			t.Fatalf("inject %v: %d %v", body, status, got)
		}
		conv := got["thread_id"].(string)
		completed.wait(t, conv)
		return conv
	}
	statusOf := func(conv string) (streamed, rest any) {
		t.Helper()
		for {
			if e := readEvent(t, stream, "thread_updated"); e["thread_id"] == conv {
				streamed = e["status"]
				break
			}
		}
		f.waitJournal()
		status, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, viewer, nil)
		if status != http.StatusOK {
			t.Fatalf("thread %s: %d %v", conv, status, body)
		}
		return streamed, body["status"]
	}

	first := inject("", "input")
	if streamed, rest := statusOf(first); streamed != "error" || rest != "error" {
		t.Fatalf("the failed conversation: stream %v, REST %v; want both error", streamed, rest)
	}
	second := inject("", "input") // the stream's memory forgets the first
	if streamed, rest := statusOf(second); streamed != "error" || rest != "error" {
		t.Fatalf("the second failed conversation: stream %v, REST %v; want both error", streamed, rest)
	}
	inject(first, "fine")
	if streamed, rest := statusOf(first); streamed != rest || rest != "error" {
		t.Errorf("the forgotten conversation continued: stream %v, REST %v; want both error", streamed, rest)
	}
	fresh := inject("", "fine")
	if streamed, rest := statusOf(fresh); streamed != rest || rest != "completed" {
		t.Errorf("a conversation that went well: stream %v, REST %v; want both completed", streamed, rest)
	}
}
