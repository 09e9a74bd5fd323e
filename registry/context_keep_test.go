package registry

import (
	"slices"
	"testing"
	"time"
)

// TestKeepEnded: the histories KeepEnded accepts outlive their thread's end
// (the sink is not told to delete them), become live again with the next
// append, are evicted before any live history at MaxThreads, and are
// collected after the TTL like any idle history.
func TestKeepEnded(t *testing.T) {
	clock := newFakeClock()
	sink := &recordingSlotSink{}
	b := newTestBuffer(t, ContextConfig{MaxThreads: 3, TTL: time.Hour, Clock: clock.Now, Sink: sink})
	b.KeepEnded(func(first Slot) bool { return first.From == "outside" })

	mustAppend(t, b, Slot{ThreadID: "live", From: "outside", To: "agent"})
	mustAppend(t, b, Slot{ThreadID: "kept", From: "outside", To: "agent"})
	mustAppend(t, b, Slot{ThreadID: "kept", From: "agent", To: "outside"})
	mustAppend(t, b, Slot{ThreadID: "inner", From: "agent", To: "tool"})
	b.ThreadsEnded([]string{"kept", "inner"})
	if tc, ok := b.Thread("kept"); !ok || tc.Len() != 2 {
		t.Fatalf("kept history: %v", ok)
	}
	if b.ThreadExists("inner") {
		t.Error("an inner thread's history outlived its end")
	}
	if got := sink.deletions(); !slices.Equal(got, []string{"deleted inner"}) {
		t.Errorf("sink deletions %v", got)
	}
	if st := b.Stats(); st.Kept != 1 || st.ThreadCount != 2 {
		t.Errorf("stats %+v", st)
	}

	// Continued: live again, so not evicted first.
	mustAppend(t, b, Slot{ThreadID: "kept", From: "outside", To: "agent"})
	if st := b.Stats(); st.Kept != 0 {
		t.Errorf("a continued history is still marked kept: %+v", st)
	}
	b.ThreadsEnded([]string{"kept"})

	// At MaxThreads the kept history goes before the older live one.
	mustAppend(t, b, Slot{ThreadID: "new1", From: "outside", To: "agent"})
	mustAppend(t, b, Slot{ThreadID: "new2", From: "outside", To: "agent"})
	if b.ThreadExists("kept") || !b.ThreadExists("live") {
		t.Errorf("eviction took the live history before the kept one: threads %v", b.Stats().Threads)
	}

	// Retain (after a restart) marks restored histories kept; Collect
	// removes idle kept histories after the TTL.
	b.Retain("new1", "missing")
	if st := b.Stats(); st.Kept != 1 {
		t.Errorf("Retain: %+v", st)
	}
	clock.Advance(2 * time.Hour)
	if n := b.Collect(); n != 3 || b.Stats().ThreadCount != 0 || b.Stats().Kept != 0 {
		t.Errorf("Collect removed %d; stats %+v", n, b.Stats())
	}

	// Without KeepEnded every ended history goes.
	b.KeepEnded(nil)
	mustAppend(t, b, Slot{ThreadID: "x", From: "outside", To: "agent"})
	b.ThreadsEnded([]string{"x"})
	if b.ThreadExists("x") {
		t.Error("history kept with KeepEnded(nil)")
	}
}
