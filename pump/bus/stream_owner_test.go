package bus

import (
	"net/http"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestThreadCreatedNamesItsOwner: the stream's thread_created event names
// the user who began the conversation as the REST thread does (owner), and
// "" for a conversation no user began.
func TestThreadCreatedNamesItsOwner(t *testing.T) {
	f := newFixture(t)
	admin := f.tokens()[auth.Admin]
	olga := f.loginAs("olga", auth.Operator)
	stream := f.dial("/api/v1/ws", admin)
	readEvent(t, stream, "connected")
	done := f.watchCompletions()
	thread := f.inject(olga, "greeter", map[string]string{"name": "Lou"})
	e := readEvent(t, stream, "thread_created")
	created, _ := e["thread"].(map[string]any)
	done.wait(t, thread)
	f.waitJournal()
	status, body, _ := f.do("GET", "/api/v1/threads/"+thread, admin, nil)
	if status != http.StatusOK || body["owner"] != "olga" {
		t.Fatalf("thread: %d %v, want owner olga", status, body)
	}
	if created["id"] != thread || created["owner"] != body["owner"] {
		t.Errorf("thread_created %v, want the owner %v of thread %s", e, body["owner"], thread)
	}
}
