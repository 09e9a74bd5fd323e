package bus

import (
	"fmt"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestSlotIndexesNumberAndForget numbers the messages of many
// conversations, each on a few threads, completing each in turn: every
// thread's messages are numbered from its history on, a completed
// conversation's counters are gone, and a thread seen again after its
// conversation completed starts from its history anew.
func TestSlotIndexesNumberAndForget(t *testing.T) {
	history := map[string]int{}
	x := newSlotIndexes(func(thread string) int { return history[thread] })
	msg := func(conv, thread string) int {
		env := []byte("<m/>")
		x.observe(pump.Event{Kind: pump.EventMessage, Conversation: conv, Thread: thread, Envelope: env})
		n, ok := x.event(pump.Event{Kind: pump.EventMessage, Conversation: conv, Thread: thread, Envelope: env})
		if !ok {
			t.Fatalf("%s/%s: no number", conv, thread)
		}
		return n
	}
	for i := range 8 * slotShards {
		conv := fmt.Sprintf("conv-%d", i)
		threads := 1 + i%8
		for j := range threads {
			th := fmt.Sprintf("%s-t%d", conv, j)
			history[th] = j // a thread with j slots already
			for k := range 2 {
				if n := msg(conv, th); n != j+k {
					t.Fatalf("%s message %d: slot %d, want %d", th, k, n, j+k)
				}
			}
		}
		x.observe(pump.Event{Kind: pump.EventComplete, Conversation: conv})
		if n := x.size(); n != 0 {
			t.Fatalf("after %s completed: %d threads counted, want 0", conv, n)
		}
	}
	// A thread of a completed conversation continued: from its history.
	history["conv-0-t0"] = 7
	if n := msg("conv-0", "conv-0-t0"); n != 7 {
		t.Fatalf("continued thread: slot %d, want 7", n)
	}
	x.observe(pump.Event{Kind: pump.EventComplete, Conversation: "conv-0"})
	if n, p := x.size(), x.pendingSize(); n != 0 || p != 0 {
		t.Fatalf("%d threads counted and %d messages pending at the end, want none", n, p)
	}
}
