package bus

import (
	"os"
	"strconv"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestCancelStopsRunCommandKeepsConversation: POST
// /api/v1/threads/{id}/cancel on a conversation whose run_command runs
// `sleep 4848` stops the program — its pid is gone — and, unlike a kill,
// keeps the conversation: the thread does not read killed, and the owner's
// next message on it is accepted and answered; a second cancel once it
// completed is 409.
func TestCancelStopsRunCommandKeepsConversation(t *testing.T) {
	f := newFixtureWith(t, commandOrganism)
	admin := f.tokens()[auth.Admin]
	completed := f.watchCompletions()
	thread := f.inject(admin, "run_command", "<RunCommand><Command>sleep</Command><Arg>4848</Arg></RunCommand>")
	var pids []int
	pollFor(t, "sleep 4848 to start", func() bool {
		pids = childPids(t, "sleep", "4848")
		return len(pids) == 1
	})
	status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/cancel", admin, nil)
	if status != 200 || body["status"] != "cancelled" || body["thread_id"] != thread {
		t.Fatalf("cancel: %d %v", status, body)
	}
	pollFor(t, "sleep 4848 to be gone", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pids[0]))
		return os.IsNotExist(err)
	})
	completed.wait(t, thread)
	if status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/cancel", admin, nil); status != 409 {
		t.Errorf("cancel of a conversation with nothing in flight: %d %v, want 409", status, body)
	}
	f.waitJournal()
	if status, body, _ := f.do("GET", "/api/v1/threads/"+thread, admin, nil); status != 200 || body["status"] == "killed" {
		t.Errorf("cancelled thread: %d %v, want it not killed", status, body)
	}
	status, body, _ = f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "run_command", "thread_id": thread,
		"payload": "<RunCommand><Command>sleep</Command><Arg>0</Arg></RunCommand>"})
	if status != 200 || body["thread_id"] != thread {
		t.Fatalf("continuing the cancelled conversation: %d %v, want it accepted on its thread", status, body)
	}
	completed.wait(t, thread)
}

// TestOperatorCancelsOwnConversation: an operator may cancel the answer of
// a conversation one of their sessions began — not another user's, which
// answers 404 as if it did not exist and keeps running — and the
// conversation stays live; a thread nobody knows is 404.
func TestOperatorCancelsOwnConversation(t *testing.T) {
	f := newFixture(t)
	olga, bob := f.loginAs("olga", auth.Operator), f.loginAs("bob", auth.Operator)
	ada := f.loginAs("ada", auth.Admin)
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	status, inj, _ := f.do("POST", "/api/v1/inject", olga, map[string]any{"to": "greeter", "payload": map[string]string{"name": "Kim"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, inj)
	}
	mine := inj["thread_id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/threads/"+mine+"/cancel", bob, nil); status != 404 || body["error"] != "Thread not found" {
		t.Fatalf("bob cancels olga's conversation: %d %v, want 404", status, body)
	}
	if !f.org.Pump.Running(mine) {
		t.Fatal("a refused cancel stopped the conversation")
	}
	pollFor(t, "the greeting to wait at the paused shouter", func() bool {
		li, ok := f.srv.listenerInfo("shouter")
		return ok && li.QueueDepth == 1
	})
	if status, body, _ := f.do("POST", "/api/v1/threads/"+mine+"/cancel", olga, nil); status != 200 || body["thread_id"] != mine {
		t.Fatalf("olga cancels her own: %d %v", status, body)
	}
	if li, _ := f.srv.listenerInfo("shouter"); li.QueueDepth != 0 {
		t.Errorf("shouter queue depth %d after the cancel, want its message swept", li.QueueDepth)
	}
	if status, body, _ := f.do("POST", "/api/v1/threads/00000000-0000-4000-8000-000000000000/cancel", ada, nil); status != 404 {
		t.Errorf("cancel of an unknown thread: %d %v, want 404", status, body)
	}
}
