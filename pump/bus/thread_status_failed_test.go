package bus

import (
	"net/http"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestFailedConversationStreamsError: a conversation that failed (its
// handler failed: a <huh> answered it) ends with thread_updated reading
// error on /api/v1/ws, as GET /api/v1/threads/{id} reads it — not
// completed; after a restart too.
func TestFailedConversationStreamsError(t *testing.T) {
	f := newFixtureWith(t, leakyOrganism(make(chan string)))
	tokens := f.tokens()
	op, viewer := tokens[auth.Operator], tokens[auth.Viewer]
	stream := f.dial("/api/v1/ws", viewer)
	readEvent(t, stream, "connected")
	c := f.dial("/ws", op)
	readFrame(t, c) // connected
	conv := sendOver(t, c, "leaky", "url")
	var streamed frame
	for streamed == nil {
		if e := readEvent(t, stream, "thread_updated"); e["thread_id"] == conv {
			streamed = e
		}
	}
	f.waitJournal()
	status, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, viewer, nil)
	if status != http.StatusOK {
		t.Fatalf("thread %s: %d %v", conv, status, body)
	}
	if streamed["status"] != body["status"] || body["status"] != "error" {
		t.Errorf("the failed conversation: stream %v, REST %v; want both error", streamed["status"], body["status"])
	}

	// After a restart, an answer of it recovered from before (its first
	// message journaled before the server started) completes with what the
	// journal says, as REST reads it.
	f.restartOrganism()
	viewer = f.loginAs("vic", auth.Viewer)
	if _, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, viewer, nil); body["status"] != "error" {
		t.Errorf("after a restart REST reads %v, want error", body["status"])
	}
	if got := f.srv.completionStatus(pump.Event{Kind: pump.EventComplete, Conversation: conv, Turn: 1}); got != "error" {
		t.Errorf("after a restart the recovered answer's completion streams %q, want error", got)
	}
}
