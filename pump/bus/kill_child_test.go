package bus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestKillRefusesAChildThread: a message naming an inner hop's thread of a
// killed conversation (greeter → shouter, held at a paused shouter; the
// client sees that thread in events and in the journal) is refused as
// killed — REST 409, a /ws error frame of code "killed" — after the kill
// and after a restart, instead of beginning a new conversation under it;
// the thread listing keeps showing the refused thread as the
// conversation's.
func TestKillRefusesAChildThread(t *testing.T) {
	f := newFixture(t)
	olgaSecret, adaSecret := f.user("olga", auth.Operator), f.user("ada", auth.Admin)
	olga, ada := f.login("olga", olgaSecret), f.login("ada", adaSecret)
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	conv := f.inject(olga, "greeter", map[string]string{"name": "Lou"})
	child := f.waitHop(conv, "shouter")
	if status, body, _ := f.do("POST", "/api/v1/threads/"+conv+"/kill", olga, nil); status != 200 {
		t.Fatalf("kill: %d %v", status, body)
	}

	type answer struct {
		Status int
		Body   map[string]any
	}
	refused := answer{409, map[string]any{"error": "Conversation was killed; start a new one"}}
	continueIt := func(token string) answer {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/inject", token,
			map[string]any{"to": "greeter", "payload": map[string]string{"name": "Ann"}, "thread_id": child})
		return answer{status, body}
	}
	if diff := cmp.Diff(refused, continueIt(olga)); diff != "" {
		t.Errorf("REST continuation on the inner hop's thread (-want +got):\n%s", diff)
	}
	c := f.dial("/ws", olga)
	readFrame(t, c)
	got := wsSendOn(t, c, "greeter", "Ann", child)
	want := frame{"type": "error", "id": "k1", "error": "Conversation was killed; start a new one", "code": "killed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/ws continuation on the inner hop's thread (-want +got):\n%s", diff)
	}
	c.Close()
	f.waitJournal()
	// The refused continuations are journaled as the conversation's: the
	// thread listing shows both threads as conv's.
	_, listing, _ := f.do("GET", "/api/v1/threads", ada, nil)
	convOf := map[string]any{}
	rows, _ := listing["threads"].([]any)
	for _, r := range rows {
		row := r.(map[string]any)
		if id := row["id"]; id == conv || id == child {
			convOf[id.(string)] = row["conversation"]
		}
	}
	if diff := cmp.Diff(map[string]any{conv: conv, child: conv}, convOf); diff != "" {
		t.Errorf("GET /api/v1/threads: the conversation of each thread (-want +got):\n%s", diff)
	}
	again := answer{409, map[string]any{"error": "Conversation already killed", "thread_id": conv}}
	killChild := func(token string) answer {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/threads/"+child+"/kill", token, nil)
		return answer{status, body}
	}
	if diff := cmp.Diff(again, killChild(olga)); diff != "" {
		t.Errorf("a kill naming the inner hop's thread (-want +got):\n%s", diff)
	}

	f.restartOrganism()
	olga = f.login("olga", olgaSecret)
	if diff := cmp.Diff(refused, continueIt(olga)); diff != "" {
		t.Errorf("REST continuation on the inner hop's thread after a restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(again, killChild(olga)); diff != "" {
		t.Errorf("a kill naming the inner hop's thread after a restart (-want +got):\n%s", diff)
	}
}

// waitHop waits until the journal holds a message of conversation conv to
// listener on a thread of its own (an inner hop) and returns that thread.
// Each look waits for the journal's commit (Flush).
func (f *fixture) waitHop(conv, listener string) string {
	f.t.Helper()
	for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); {
		f.waitJournal()
		es, err := f.org.Store().Conversation(conv)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range es {
			if e.To == listener && e.Thread != conv {
				return e.Thread
			}
		}
	}
	f.t.Fatalf("no hop of %s to %s was journaled", conv, listener)
	return ""
}
