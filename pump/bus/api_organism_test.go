package bus

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestActiveThreadsCountsRunningConversations: once a conversation has
// completed, its threads are kept for a continuation but are not active:
// /api/v1/organism's active_threads falls back to 0, as every listed
// thread's status says "completed".
func TestActiveThreadsCountsRunningConversations(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()[auth.Operator]
	ws := f.dial("/ws", tok)
	readUntil(t, ws, "connected")
	sendOver(t, ws, "greeter", "Dan")
	readUntil(t, ws, "complete")
	if st := f.org.Pump.Stats(); st.Threads == 0 {
		t.Fatal("no thread kept after the conversation: the test shows nothing")
	}
	status, org, _ := f.do("GET", "/api/v1/organism", tok, nil)
	if status != 200 || org["active_threads"] != 0.0 {
		t.Fatalf("after the conversation completed: %d active_threads %v, want 0", status, org["active_threads"])
	}
}
