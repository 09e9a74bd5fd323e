package bus

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestEncodeFrames encodes an item of every kind the /ws writer queues and
// checks each frame is the JSON object of its type, with its conversation
// and a message id where it has one, in the buffer the writer reuses
// (each frame read before the next is encoded), and that an event kind /ws
// does not forward makes no frame.
func TestEncodeFrames(t *testing.T) {
	env := []byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from><to>b</to>` +
		`<thread>t1</thread></meta><greeting><text>hi</text></greeting></message>`)
	now := time.Date(2026, 11, 27, 12, 0, 0, 5, time.UTC)
	ev := func(k pump.EventKind) pump.Event {
		return pump.Event{Kind: k, Time: now, Conversation: "c1", Thread: "t1", From: "a", To: "b", Listener: "b",
			PayloadName: "greeting", Envelope: env, Error: "why", Diagnostics: []string{"d"}}
	}
	tests := []struct {
		item   any
		typ    string
		hasID  bool
		fields map[string]any
	}{
		{ev(pump.EventMessage), wire.TypeMessage, true, map[string]any{"to": "b", "payload_type": "greeting",
			"payload": `<greeting><text>hi</text></greeting>`, "timestamp": "2026-11-27T12:00:00.000000005Z"}},
		{ev(pump.EventReply), wire.TypeReply, true, map[string]any{"from": "a"}},
		{ev(pump.EventHuh), wire.TypeHuh, true, map[string]any{"error": "why"}},
		{ev(pump.EventSystemError), wire.TypeSystemError, true, map[string]any{"error": "why"}},
		{ev(pump.EventDeadLetter), wire.TypeDeadLetter, true, map[string]any{"error": "why"}},
		{ev(pump.EventRefusal), wire.TypeRefusal, true, map[string]any{"error": "why"}},
		{ev(pump.EventComplete), wire.TypeComplete, true, nil},
		{organism.Output{Kind: organism.OutputPrint, Conversation: "c1", Thread: "t1", From: "shouter", Text: "HI"},
			wire.TypeOutput, true, map[string]any{"from": "shouter", "text": "HI"}},
		{newPendingDelta(organism.Output{Kind: organism.OutputDelta, Conversation: "c1", From: "agent", Text: "par"}),
			wire.TypeDelta, false, map[string]any{"agent": "agent", "text": "par"}},
		{wire.Sent{Head: wire.Head{Type: wire.TypeSent, ID: json.RawMessage("7")}, ThreadID: "c1", Target: "greeter"},
			wire.TypeSent, false, map[string]any{"id": float64(7), "target": "greeter"}},
		{map[string]any{"type": "custom", "thread_id": "c1"}, "custom", false, nil}, // reflection's path
	}
	w := &wsSocket{details: true} // an operator's socket: failures' details as the pump tells them
	for _, tt := range tests {
		mt, data, err := w.encode(tt.item)
		if err != nil || mt != websocket.TextMessage {
			t.Fatalf("%s: encode: %d, %v", tt.typ, mt, err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: not JSON: %v: %s", tt.typ, err, data)
		}
		if got["type"] != tt.typ || got["thread_id"] != "c1" {
			t.Errorf("%s: frame %s", tt.typ, data)
		}
		if id, _ := got["message_id"].(string); tt.hasID && len(id) != 64 {
			t.Errorf("%s: message_id %q, want a SHA-256", tt.typ, id)
		}
		for k, v := range tt.fields {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tt.typ, k, got[k], v)
			}
		}
	}
	if _, data, err := w.encode(pump.Event{Kind: pump.EventKind("no-such-kind"), Conversation: "c1"}); err != nil || len(data) != 0 {
		t.Errorf("an event /ws does not forward: %q, %v; want no frame", data, err)
	}
}
