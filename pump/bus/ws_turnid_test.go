package bus

import (
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestWSTurnsOfAThreadHaveDistinctIDs: every frame of a continued thread's
// new turn carries a message_id no frame of an earlier turn carried — the
// same words sent again, too — so a client deduplicating by message_id
// (as the README advises) keeps each turn's completion. Only the message
// frame of a byte-identical envelope shares its id: that id is the
// envelope's SHA-256, the REST API's message id.
func TestWSTurnsOfAThreadHaveDistinctIDs(t *testing.T) {
	f := newFixture(t)
	c := f.dial("/ws", f.loginAs("alice", auth.Operator))
	readFrame(t, c) // connected
	seen := map[string]frame{}
	thread := ""
	for i, req := range []frame{
		{"type": "send", "raw": "@greeter Dan", "id": "1"},
		{"type": "send", "target": "greeter", "content": "Eve", "id": "2"},
		{"type": "send", "target": "greeter", "content": "Eve", "id": "3"},
	} {
		if thread != "" {
			req["thread_id"] = thread
		}
		writeFrame(t, c, req)
		sent := readFrame(t, c)
		if sent["type"] != "sent" {
			t.Fatalf("turn %d: got %v, want sent", i+1, sent)
		}
		conv := sent["thread_id"].(string)
		if thread == "" {
			thread = conv
		}
		for _, fr := range conversation(t, c, conv) {
			id, _ := fr["message_id"].(string)
			if prev, dup := seen[id]; dup && fr["type"] == "message" && prev["type"] == "message" && fr["payload"] == prev["payload"] &&
				fr["from"] == prev["from"] && fr["to"] == prev["to"] {
				continue
			}
			if prev, dup := seen[id]; dup {
				t.Errorf("turn %d: frame %v reuses message_id %.12s… of %v", i+1, fr, id, prev)
			}
			seen[id] = fr
		}
	}
}

// TestEventIDKeepsATurnsEvent: an event told again (the same turn, after a
// reconnect or a crash's re-handling) keeps its message_id; the same
// event of another turn of the thread does not.
func TestEventIDKeepsATurnsEvent(t *testing.T) {
	base := pump.Event{Kind: pump.EventComplete, Conversation: "c", Thread: "c", Turn: 7}
	again := base
	again.Time = base.Time.Add(time.Hour)
	next := base
	next.Turn = 9
	for _, tc := range []struct {
		name string
		a, b pump.Event
		same bool
	}{
		{"told again", base, again, true},
		{"next turn", base, next, false},
	} {
		if got := eventID(wire.TypeComplete, tc.a) == eventID(wire.TypeComplete, tc.b); got != tc.same {
			t.Errorf("%s: same id %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestEventIDTellsATurnsFailuresApart: two envelope-less <huh> events of
// one turn on one thread — two bad messages of one agent's reply, or two
// listeners of a broadcast failing on one message — carry distinct ids,
// while the same failure told again keeps its id.
func TestEventIDTellsATurnsFailuresApart(t *testing.T) {
	huh := func(listener, attempt string) pump.Event {
		return pump.Event{Kind: pump.EventHuh, Conversation: "c", Thread: "t", From: "core", To: "agent",
			Listener: listener, PayloadName: "huh", Error: "no such capability", Turn: 7,
			Payload: &xmlpipe.Huh{Error: "no such capability", OriginalAttempt: []byte(attempt)}}
	}
	for _, tc := range []struct {
		name string
		a, b pump.Event
		same bool
	}{
		{"told again", huh("", "<a/>"), huh("", "<a/>"), true},
		{"two bad messages of one reply", huh("", "<a/>"), huh("", "<b/>"), false},
		{"two listeners failing on one message", huh("l1", "<a/>"), huh("l2", "<a/>"), false},
	} {
		if got := eventID(wire.TypeHuh, tc.a) == eventID(wire.TypeHuh, tc.b); got != tc.same {
			t.Errorf("%s: same id %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestEventIDTellsTwinSystemErrorsApart: two SystemError events of one
// turn alike in all but what they are about — the same violation in two
// places of one reply — carry distinct ids; the same one told again (a
// crash's re-handling gives it the same About) keeps its id.
func TestEventIDTellsTwinSystemErrorsApart(t *testing.T) {
	se := func(about string) pump.Event {
		return pump.Event{Kind: pump.EventSystemError, Conversation: "c", Thread: "t", From: "system", To: "agent",
			PayloadName: "SystemError", Turn: 7, About: about, Payload: &xmlpipe.SystemError{Code: "routing",
				Message: "Message could not be delivered. Please verify your target and try again.", RetryAllowed: true}}
	}
	for _, tc := range []struct {
		name string
		a, b pump.Event
		same bool
	}{
		{"told again", se("17#0"), se("17#0"), true},
		{"two violations of one reply", se("17#0"), se("17#1"), false},
		{"two calls' violations", se("ref:call_1"), se("ref:call_2"), false},
	} {
		if got := eventID(wire.TypeSystemError, tc.a) == eventID(wire.TypeSystemError, tc.b); got != tc.same {
			t.Errorf("%s: same id %v, want %v", tc.name, got, tc.same)
		}
	}
}
