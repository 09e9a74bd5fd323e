package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestKillFinishedConversation: a kill of a conversation that no longer
// runs answers 409 with its state and changes nothing — a completed one
// reads completed afterwards and may still be continued by its owner, one
// killed already says so (GET still finds it, so 404 would be a lie) — and
// a thread the organism never used is 404.
func TestKillFinishedConversation(t *testing.T) {
	f := newFixture(t)
	olga, ada := f.loginAs("olga", auth.Operator), f.loginAs("ada", auth.Admin)
	done := f.watchCompletions()
	thread := f.inject(olga, "greeter", map[string]string{"name": "Kim"})
	done.wait(t, thread)
	f.waitJournal()

	type answer struct {
		Status int
		Body   map[string]any
	}
	kill := func(token, id string) answer {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/threads/"+id+"/kill", token, nil)
		return answer{status, body}
	}
	statusOf := func(id string) any {
		t.Helper()
		_, body, _ := f.do("GET", "/api/v1/threads/"+id, ada, nil)
		return body["status"]
	}
	completed := answer{409, map[string]any{"error": "Conversation already completed", "thread_id": thread}}
	for _, who := range []struct{ name, token string }{{"owner", olga}, {"admin", ada}} {
		if diff := cmp.Diff(completed, kill(who.token, thread)); diff != "" {
			t.Errorf("%s kills the completed conversation (-want +got):\n%s", who.name, diff)
		}
	}
	if got := statusOf(thread); got != "completed" {
		t.Errorf("after the refused kills the conversation reads %v, want completed", got)
	}
	if !f.org.Pump.Threads().Known(thread) {
		t.Error("a refused kill ended the completed conversation's thread")
	}

	// The owner continues it; the continuation completes as before.
	status, body, _ := f.do("POST", "/api/v1/inject", olga,
		map[string]any{"to": "greeter", "payload": map[string]string{"name": "Ann"}, "thread_id": thread})
	if status != 200 || body["thread_id"] != thread {
		t.Fatalf("continue: %d %v", status, body)
	}
	done.wait(t, thread)

	// A conversation killed while it runs: a second kill says it is killed.
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	running := f.inject(olga, "greeter", map[string]string{"name": "Lou"})
	if got := kill(olga, running); got.Status != 200 {
		t.Fatalf("kill the running conversation: %+v", got)
	}
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/resume", ada, nil); status != 200 {
		t.Fatalf("resume: %d %v", status, body)
	}
	done.wait(t, running)
	f.waitJournal()
	killed := answer{409, map[string]any{"error": "Conversation already killed", "thread_id": running}}
	if diff := cmp.Diff(killed, kill(olga, running)); diff != "" {
		t.Errorf("a second kill (-want +got):\n%s", diff)
	}
	if got := statusOf(running); got != "killed" {
		t.Errorf("the killed conversation reads %v, want killed", got)
	}

	// A conversation whose thread ended with it (response-handler ends
	// the chain) is known to the journal only: completed too.
	ended := f.inject(olga, "response-handler", map[string]string{"message": "HI"})
	done.wait(t, ended)
	f.waitJournal()
	if f.org.Pump.Threads().Known(ended) {
		t.Fatal("precondition: response-handler's thread outlives its conversation")
	}
	endedAnswer := answer{409, map[string]any{"error": "Conversation already completed", "thread_id": ended}}
	if diff := cmp.Diff(endedAnswer, kill(ada, ended)); diff != "" {
		t.Errorf("kill of a conversation whose thread ended (-want +got):\n%s", diff)
	}

	notFound := answer{404, map[string]any{"error": "Thread not found"}}
	if diff := cmp.Diff(notFound, kill(ada, stage.NewThreadID())); diff != "" {
		t.Errorf("kill of a thread never used (-want +got):\n%s", diff)
	}
}
