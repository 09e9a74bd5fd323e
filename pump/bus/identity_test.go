package bus

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// busConversation sends a greeting from from on thread over the /bus socket c
// and reads the organism's two answers; it returns the thread of the last
// (a thread of the conversation the organism hands back).
func busConversation(t *testing.T, c *websocket.Conn, from, thread string) string {
	t.Helper()
	sendRaw(t, c, envelope(from, thread, "Dan"))
	if e, raw := readEnvelope(t, c); e.From != "greeter" {
		t.Fatalf("first answer %s", raw)
	}
	shout, raw := readEnvelope(t, c)
	if shout.From != "shouter" {
		t.Fatalf("second answer %s", raw)
	}
	return shout.Thread
}

// threadState is what a client can see of a thread through the API.
type threadState struct {
	Thread   map[string]any
	Messages []any
}

func (f *fixture) threadState(token, id string) threadState {
	f.t.Helper()
	f.waitJournal()
	status, th, _ := f.do("GET", "/api/v1/threads/"+id, token, nil)
	if status != http.StatusOK {
		f.t.Fatalf("thread %s: %d %v", id, status, th)
	}
	delete(th, "last_activity") // unchanged anyway; kept out of the diff's noise
	status, ms, _ := f.do("GET", "/api/v1/threads/"+id+"/messages?scope=conversation", token, nil)
	if status != http.StatusOK {
		f.t.Fatalf("messages of %s: %d %v", id, status, ms)
	}
	list, _ := ms["messages"].([]any)
	return threadState{Thread: th, Messages: list}
}

// securityEvents counts the refusals logged as security events naming user.
func (f *fixture) securityEvents(user string) int {
	f.logs.mu.Lock()
	defer f.logs.mu.Unlock()
	n := 0
	for _, rec := range f.logs.list {
		if rec.Message != "security event: message refused: sender or thread not the session's" {
			continue
		}
		security, named := false, false
		rec.Attrs(func(a slog.Attr) bool {
			switch {
			case a.Key == "security" && a.Value.Any() == true:
				security = true
			case a.Key == "user" && a.Value.String() == user:
				named = true
			}
			return true
		})
		if security && named {
			n++
		}
	}
	return n
}

// TestIdentityForgeriesRefused: bob, an operator like alice, tries to speak
// as alice and into her conversation on every ingress. Each attempt is
// refused with the canned <huh> text (or its REST/stream form), logged as a
// security event, and leaves alice's thread exactly as it was; alice herself
// still continues her conversation, also on a thread handed back to her.
func TestIdentityForgeriesRefused(t *testing.T) {
	f := newFixture(t)
	alice := f.loginAs("alice", auth.Operator)
	bob := f.loginAs("bob", auth.Operator)
	completed := f.watchCompletions()
	aliceBus := f.dial("/bus", alice)
	bobBus := f.dial("/bus", bob)
	bobStream := f.dial("/api/v1/ws", bob)
	readFrame(t, bobStream) // connected

	victim := stage.NewThreadID()
	handed := busConversation(t, aliceBus, "websocket:alice", victim)
	completed.wait(t, victim)
	status, body, _ := f.do("POST", "/api/v1/inject", alice, map[string]any{"to": "greeter",
		"payload": map[string]string{"name": "Ann"}})
	restVictim, _ := body["thread_id"].(string)
	if status != http.StatusOK || !stage.IsThreadID(restVictim) {
		t.Fatalf("alice's inject: %d %v", status, body)
	}
	completed.wait(t, restVictim)
	before := f.threadState(alice, victim)
	restBefore := f.threadState(alice, restVictim)
	if before.Thread["status"] != "completed" || len(before.Messages) == 0 {
		t.Fatalf("alice's thread before: %v", before)
	}

	busForgeries := []struct{ name, frame string }{
		{"from alice", envelope("websocket:alice", stage.NewThreadID(), "Mallory")},
		{"from alice's other identity", envelope("api:alice", stage.NewThreadID(), "Mallory")},
		{"from alice on her thread", envelope("websocket:alice", victim, "Mallory")},
		{"bob on alice's thread", envelope("websocket:bob", victim, "Mallory")},
		{"bob on the thread handed to alice", envelope("websocket:bob", handed, "Mallory")},
		{"bob on alice's REST thread", envelope("websocket:bob", restVictim, "Mallory")},
	}
	for _, tt := range busForgeries {
		t.Run("bus/"+tt.name, func(t *testing.T) {
			n := f.securityEvents("bob")
			sendRaw(t, bobBus, tt.frame)
			huh, raw := readEnvelope(t, bobBus)
			if huh.From != "core" || huh.To != "websocket:bob" || huh.Payload.XMLName.Local != "huh" ||
				huh.Payload.Error != failure.HuhEnvelope || huh.Thread == victim || huh.Thread == handed {
				t.Errorf("answer %s, want a <huh> %q to websocket:bob on none of alice's threads", raw, failure.HuhEnvelope)
			}
			if got := f.securityEvents("bob"); got != n+1 {
				t.Errorf("%d security events, want %d", got, n+1)
			}
		})
	}
	for _, thread := range []string{victim, handed, restVictim} {
		t.Run("rest/thread_id", func(t *testing.T) {
			n := f.securityEvents("bob")
			status, body, _ := f.do("POST", "/api/v1/inject", bob, map[string]any{"to": "greeter",
				"payload": map[string]string{"name": "Mallory"}, "thread_id": thread})
			if status != http.StatusUnprocessableEntity || body["error"] != failure.HuhEnvelope {
				t.Errorf("bob's inject into %s: %d %v, want 422 %q", thread, status, body, failure.HuhEnvelope)
			}
			if got := f.securityEvents("bob"); got != n+1 {
				t.Errorf("%d security events, want %d", got, n+1)
			}
		})
	}
	t.Run("stream inject thread_id", func(t *testing.T) {
		n := f.securityEvents("bob")
		writeFrame(t, bobStream, frame{"cmd": "inject", "to": "greeter", "payload": map[string]string{"name": "M"},
			"thread_id": victim})
		for {
			got := readFrame(t, bobStream)
			if got["event"] == "injected" {
				t.Fatalf("stream inject into alice's thread accepted: %v", got)
			}
			if _, published := got["kind"]; got["event"] == "error" && !published { // the command's answer
				if got["error"] != failure.HuhEnvelope {
					t.Errorf("answer %v, want the error %q", got, failure.HuhEnvelope)
				}
				break
			}
		}
		if got := f.securityEvents("bob"); got != n+1 {
			t.Errorf("%d security events, want %d", got, n+1)
		}
	})

	if diff := cmp.Diff(before, f.threadState(alice, victim)); diff != "" {
		t.Errorf("alice's /bus thread changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(restBefore, f.threadState(alice, restVictim)); diff != "" {
		t.Errorf("alice's REST thread changed (-before +after):\n%s", diff)
	}
	// Nothing was journaled as alice's but alice's own messages.
	status, all, _ := f.do("GET", "/api/v1/messages?limit=1000", alice, nil)
	if status != http.StatusOK {
		t.Fatalf("messages: %d %v", status, all)
	}
	for _, m := range all["messages"].([]any) {
		m := m.(map[string]any)
		if from := m["from"].(string); (from == "websocket:alice" || from == "api:alice") &&
			m["conversation"] != victim && m["conversation"] != restVictim {
			t.Errorf("journaled as alice: %v", m)
		}
	}

	// The legitimate cases: alice continues her conversation, on its thread,
	// on the thread handed back to her, and through REST as api:alice.
	t.Run("alice on her own thread", func(t *testing.T) {
		busConversation(t, aliceBus, "websocket:alice", victim)
	})
	t.Run("alice on the thread handed to her", func(t *testing.T) {
		busConversation(t, aliceBus, "websocket:alice", handed)
	})
	t.Run("alice through REST on her thread", func(t *testing.T) {
		status, body, _ := f.do("POST", "/api/v1/inject", alice, map[string]any{"to": "greeter",
			"payload": map[string]string{"name": "Ann"}, "thread_id": victim})
		if status != http.StatusOK || body["thread_id"] != victim {
			t.Errorf("alice's inject into her thread: %d %v", status, body)
		}
	})
	t.Run("bob on a new thread of his own", func(t *testing.T) {
		busConversation(t, bobBus, "websocket:bob", stage.NewThreadID())
	})
}

// xmlEnvelope is an envelope from from to to on thread around payload.
func xmlEnvelope(from, to, thread, payload string) string {
	return `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>` + from + `</from><to>` + to +
		`</to><thread>` + thread + `</thread></meta>` + payload + `</message>`
}

// TestIdentityLiveThread: bob names a live thread of alice's conversation on
// /bus. He is refused, the gate listener does not run for him, and he never
// receives the events of alice's conversation, which goes on for her alone.
func TestIdentityLiveThread(t *testing.T) {
	g := newGates(t)
	f := newFixtureWith(t, statesOrganism(t, g))
	aliceBus := f.dial("/bus", f.loginAs("alice", auth.Operator))
	bobBus := f.dial("/bus", f.loginAs("bob", auth.Operator))
	victim := stage.NewThreadID()
	ask := func(note string) string { return `<Ask xmlns=""><Note>` + note + `</Note></Ask>` }

	sendRaw(t, aliceBus, xmlEnvelope("websocket:alice", "asker", victim, ask("first")))
	gateThread := g.enter(t) // alice's conversation is live: the gate holds it
	if e, raw := readEnvelope(t, aliceBus); e.From != "asker" || e.To != "gate" {
		t.Fatalf("alice got %s, want the asker's job", raw)
	}

	for _, thread := range []string{victim, gateThread} {
		n := f.securityEvents("bob")
		sendRaw(t, bobBus, xmlEnvelope("websocket:bob", "asker", thread, ask("mallory")))
		huh, raw := readEnvelope(t, bobBus)
		if huh.Payload.XMLName.Local != "huh" || huh.Payload.Error != failure.HuhEnvelope || huh.Thread == thread {
			t.Errorf("bob on alice's live thread %s: %s", thread, raw)
		}
		if got := f.securityEvents("bob"); got != n+1 {
			t.Errorf("%d security events, want %d", got, n+1)
		}
	}

	// alice goes on in her conversation: her second turn waits for the
	// first, held at the gate.
	sendRaw(t, aliceBus, xmlEnvelope("websocket:alice", "asker", victim, ask("second")))
	// bob's next frame is the answer to his own message, nothing of alice's.
	sendRaw(t, bobBus, xmlEnvelope("websocket:bob", "echo", stage.NewThreadID(), `<Echo xmlns=""><Note>hi</Note></Echo>`))
	if e, raw := readEnvelope(t, bobBus); e.From != "echo" || e.To != "websocket:bob" {
		t.Errorf("bob got %s, want his echo", raw)
	}
	g.open(t) // the first job: alice's first turn completes, her second begins
	if th := g.enter(t); th == "" {
		t.Fatal("the gate did not take alice's second job")
	}
	// The asker's second job reaches alice (after what is left of the first turn).
	for i := 0; ; i++ {
		e, raw := readEnvelope(t, aliceBus)
		if e.From == "asker" && e.To == "gate" {
			break
		}
		if i == 8 {
			t.Fatalf("alice got %s, want the asker's second job", raw)
		}
	}
	g.open(t)
}
