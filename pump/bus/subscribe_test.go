package bus

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// kindsOf sends @greeter Dan on c and returns the types of the frames of
// its conversation up to its complete frame.
func kindsOf(t *testing.T, c *websocket.Conn) []string {
	t.Helper()
	if err := c.WriteJSON(frame{"type": "send", "raw": "@greeter Dan"}); err != nil {
		t.Fatalf("send: %v", err)
	}
	sent := readFrame(t, c)
	conv, _ := sent["thread_id"].(string)
	if sent["type"] != "sent" || conv == "" {
		t.Fatalf("got %v, want sent", sent)
	}
	var kinds []string
	for {
		f := readFrame(t, c)
		if f["thread_id"] != conv {
			t.Fatalf("frame of another conversation: %v", f)
		}
		kinds = append(kinds, f["type"].(string))
		if f["type"] == "complete" {
			return kinds
		}
		if f["type"] == "output" && f["text"] != "HELLO, DAN!" {
			t.Errorf("output %v", f)
		}
	}
}

func TestWSSubscribe(t *testing.T) {
	f := newFixture(t)
	c := f.dial("/ws", f.loginAs("alice", auth.Operator))
	readFrame(t, c) // connected

	steps := []struct {
		name   string
		events []string
		answer frame
		kinds  []string // of the next conversation
	}{
		{name: "all by default", kinds: []string{"message", "message", "message", "output", "complete"}},
		{name: "output and complete", events: []string{"output", "complete", "output"},
			answer: frame{"type": "subscribed", "id": "s1", "events": []any{"complete", "output"}},
			kinds:  []string{"output", "complete"}},
		{name: "unknown event keeps the subscription", events: []string{"output", "dance"},
			answer: frame{"type": "error", "id": "s1", "error": "Unknown event type: dance", "code": "bad_request"},
			kinds:  []string{"output", "complete"}},
		{name: "messages only", events: []string{"message", "complete"},
			answer: frame{"type": "subscribed", "id": "s1", "events": []any{"complete", "message"}},
			kinds:  []string{"message", "message", "message", "complete"}},
		{name: "empty list is everything again", events: []string{},
			answer: frame{"type": "subscribed", "id": "s1", "events": []any{"approval", "approval_decided", "complete",
				"dead_letter", "delta", "guardian_alert", "halted", "huh", "message", "output", "refusal", "reply",
				"resumed", "system_error"}},
			kinds: []string{"message", "message", "message", "output", "complete"}},
	}
	for _, st := range steps {
		if st.answer != nil {
			writeFrame(t, c, frame{"type": "subscribe", "id": "s1", "events": st.events})
			if diff := cmp.Diff(st.answer, readFrame(t, c)); diff != "" {
				t.Fatalf("%s: answer (-want +got):\n%s", st.name, diff)
			}
		}
		if diff := cmp.Diff(st.kinds, kindsOf(t, c)); diff != "" {
			t.Fatalf("%s: frames (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestWSSubscribeGovernance: governance pushes, too, reach only the sockets
// subscribed to them.
func TestWSSubscribeGovernance(t *testing.T) {
	f := newFixture(t)
	admin := f.loginAs("root", auth.Admin)
	quiet := f.dial("/ws", admin)
	all := f.dial("/ws", admin)
	readFrame(t, quiet)
	readFrame(t, all)
	writeFrame(t, quiet, frame{"type": "subscribe", "events": []string{"resumed"}})
	if got := readFrame(t, quiet); got["type"] != "subscribed" {
		t.Fatalf("subscribe: %v", got)
	}
	for _, path := range []string{"/api/v1/organism/halt", "/api/v1/organism/resume"} {
		if status, body, _ := f.do("POST", path, admin, nil); status != http.StatusOK {
			t.Fatalf("%s: %d %v", path, status, body)
		}
	}
	if got := readFrame(t, all); got["type"] != "halted" {
		t.Fatalf("unfiltered socket: %v, want halted", got)
	}
	if got := readFrame(t, all); got["type"] != "resumed" {
		t.Fatalf("unfiltered socket: %v, want resumed", got)
	}
	if got := readFrame(t, quiet); got["type"] != "resumed" {
		t.Fatalf("socket subscribed to resumed only: %v, want resumed (and no halted before it)", got)
	}
}
