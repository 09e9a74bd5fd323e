package bus

import (
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestWSSendToShouterWithoutSender: a client writing to shouter directly
// leaves its OriginalSender empty; the client gets a huh saying so, and
// nothing internal (no dead letter about the thread registry).
func TestWSSendToShouterWithoutSender(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("sam", auth.Operator)
	c := f.dial("/ws", token)
	readFrame(t, c)
	writeFrame(t, c, frame{"type": "send", "target": "shouter", "content": "hi"})
	sent := readFrame(t, c)
	conv, _ := sent["thread_id"].(string)
	if sent["type"] != "sent" {
		t.Fatalf("got %v, want sent", sent)
	}
	var huh frame
	for _, fr := range conversation(t, c, conv) {
		switch fr["type"] {
		case "huh":
			huh = fr
		case "dead_letter":
			t.Errorf("dead letter: %v", fr)
		}
	}
	diags, _ := huh["diagnostics"].([]any)
	if huh["to"] != "websocket:sam" || len(diags) != 1 || !strings.Contains(diags[0].(string), "OriginalSender is empty") {
		t.Errorf("huh %v: want one to websocket:sam saying OriginalSender is empty", huh)
	}
}
