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
	x := newSlotIndexes(func(thread string) int { return history[thread] }, nil)
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

// TestSlotIndexesSteadyStateAllocations numbers the messages of one
// conversation after another, each on three threads, as the bus does for
// every /ws conversation: once warmed up, a conversation's counters cost
// no allocation (its thread list is one a completed conversation left).
func TestSlotIndexesSteadyStateAllocations(t *testing.T) {
	x := newSlotIndexes(func(string) int { return 0 }, nil)
	const convs, threads = 64, 3
	type conversation struct {
		id      string
		threads [threads]string
		envs    [threads][]byte
	}
	cs := make([]conversation, convs)
	for i := range cs {
		cs[i].id = fmt.Sprintf("conv-%d", i)
		for j := range threads {
			cs[i].threads[j] = fmt.Sprintf("conv-%d-t%d", i, j)
			cs[i].envs[j] = []byte("<m/>")
		}
	}
	next := 0
	run := func() {
		c := &cs[next%convs]
		next++
		for j := range threads {
			e := pump.Event{Kind: pump.EventMessage, Conversation: c.id, Thread: c.threads[j], Envelope: c.envs[j]}
			x.observe(e)
			if _, ok := x.event(e); !ok {
				t.Fatalf("%s: no number", c.threads[j])
			}
		}
		x.observe(pump.Event{Kind: pump.EventComplete, Conversation: c.id})
	}
	for range 4 * convs { // warm up: the maps grown, the lists kept
		run()
	}
	if allocs := testing.AllocsPerRun(10*convs, run); allocs != 0 {
		t.Errorf("%.2f allocations per conversation, want 0", allocs)
	}
	if n, p := x.size(), x.pendingSize(); n != 0 || p != 0 {
		t.Errorf("%d threads counted and %d messages pending at the end, want none", n, p)
	}
}

// BenchmarkSlotIndexesConversation is the numbering of one /ws
// conversation's messages: three threads, a message on each numbered as
// the pump accepts it (observe) and read back by the message log (event),
// then the completion — what every reply costs the bus here.
func BenchmarkSlotIndexesConversation(b *testing.B) {
	for _, read := range []bool{true, false} {
		b.Run(fmt.Sprintf("log read %v", read), func(b *testing.B) {
			benchSlotIndexes(b, newSlotIndexes(func(string) int { return 0 }, func() bool { return read }))
		})
	}
}

// benchSlotIndexes runs BenchmarkSlotIndexesConversation on x.
func benchSlotIndexes(b *testing.B, x *slotIndexes) {
	const convs, threads = 64, 3
	ids := make([]string, convs)
	names := make([][threads]string, convs)
	for i := range ids {
		ids[i] = fmt.Sprintf("conv-%d", i)
		for j := range threads {
			names[i][j] = fmt.Sprintf("conv-%d-t%d", i, j)
		}
	}
	env := []byte("<m/>")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := i % convs
		i++
		for j := range threads {
			e := pump.Event{Kind: pump.EventMessage, Conversation: ids[c], Thread: names[c][j], Envelope: env}
			x.observe(e)
			x.event(e)
		}
		x.observe(pump.Event{Kind: pump.EventComplete, Conversation: ids[c]})
	}
}

// TestSlotIndexesUnwatched numbers a thread's messages while nobody reads
// the message log, then while someone does: unread, a message keeps no
// number waiting for its event (nothing pending, event finds none), yet
// the thread's counter goes on, so the first message read has its true
// slot.
func TestSlotIndexesUnwatched(t *testing.T) {
	reading := false
	x := newSlotIndexes(func(string) int { return 2 }, func() bool { return reading })
	msg := func(env []byte) (int, bool) {
		e := pump.Event{Kind: pump.EventMessage, Conversation: "c", Thread: "t", Envelope: env}
		x.observe(e)
		return x.event(e)
	}
	tests := []struct {
		reading bool
		slot    int
		ok      bool
		pending int
	}{
		{false, 0, false, 0},
		{false, 0, false, 0},
		{true, 4, true, 0},
		{true, 5, true, 0},
	}
	for i, tt := range tests {
		reading = tt.reading
		slot, ok := msg([]byte("<m/>"))
		if slot != tt.slot || ok != tt.ok {
			t.Errorf("message %d (log read %v): slot %d %v, want %d %v", i, tt.reading, slot, ok, tt.slot, tt.ok)
		}
		if n := x.pendingSize(); n != tt.pending {
			t.Errorf("message %d: %d numbers pending, want %d", i, n, tt.pending)
		}
	}
	// A number given while the log was read is still told after its reader
	// left (the event was due).
	env := []byte("<m/>")
	e := pump.Event{Kind: pump.EventMessage, Conversation: "c", Thread: "t", Envelope: env}
	x.observe(e)
	reading = false
	if slot, ok := x.event(e); slot != 6 || !ok {
		t.Errorf("message numbered while read: slot %d %v, want 6 true", slot, ok)
	}
	x.observe(pump.Event{Kind: pump.EventComplete, Conversation: "c"})
	if n, p := x.size(), x.pendingSize(); n != 0 || p != 0 {
		t.Errorf("%d threads counted, %d numbers pending after the completion, want none", n, p)
	}
}
