package registry

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rowSink keeps each live thread's last reported record, as the store
// keeps its rows: created whole, rewritten whole by ThreadsTouched.
type rowSink struct {
	mu   sync.Mutex
	rows map[string]ThreadRecord
}

// ThreadCreated keeps rec.
func (s *rowSink) ThreadCreated(rec ThreadRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[rec.ID] = rec
}

// ThreadsEnded drops ids.
func (s *rowSink) ThreadsEnded(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.rows, id)
	}
}

// ThreadsTouched rewrites recs.
func (s *rowSink) ThreadsTouched(recs []ThreadRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.rows[r.ID] = r
	}
}

// records returns the kept rows.
func (s *rowSink) records() []ThreadRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.rows))
}

// TestSpentMarksAcrossRestart: a thread's lifetime marks — spent by a
// forward (ForwardAs) or a failure (Spend), awaiting answers (Await) —
// reach the sink with the activity sweep (SaveActivity; no write of their
// own), even when made in the instant the thread was created, and Restore
// gives them back: after a restart, the conversation's completion
// (EndSpent) ends the spent threads, not the one that awaits, instead of
// leaving them to the TTL.
func TestSpentMarksAcrossRestart(t *testing.T) {
	clk := newFakeClock()
	sink := &rowSink{rows: map[string]ThreadRecord{}}
	th := newTestThreads(clk, sink)
	since := clk.Now() // the sweep before
	clk.Advance(time.Second)
	root := mustBegin(t, th, "client", "a")
	a, _ := mustForward(t, th, root, "b") // root's forward does not mark it
	b, spent := mustForward(t, th, a, "c")
	if !spent {
		t.Fatal("a's forward did not mark it spent")
	}
	failed, _ := mustForward(t, th, b, "d") // d's handler fails
	if !th.Spend(failed) {
		t.Fatal("Spend did not mark the failed hop")
	}
	waits, _ := mustForward(t, th, b, "e") // e awaits answers from outside
	th.Await(waits)
	if th.Spend(root) {
		t.Error("Spend marked the conversation root")
	}
	if th.Spend(waits) {
		t.Error("Spend marked a thread that awaits answers")
	}
	clk.Advance(time.Second)
	th.SaveActivity(since)

	restored := newTestThreads(clk, nil)
	if err := restored.Restore(sink.records()); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	type marks struct{ Spent, Awaiting bool }
	got := map[string]marks{}
	for _, r := range restored.Records() {
		got[r.ID] = marks{r.Spent, r.Awaiting}
	}
	want := map[string]marks{root: {}, a: {Spent: true}, b: {Spent: true}, failed: {Spent: true}, waits: {Awaiting: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("marks after the restart (-want +got):\n%s", diff)
	}
	// b's handler forwarded twice: its chain lives on while e awaits.
	if n := restored.EndSpent(root, nil); n != 1 {
		t.Errorf("EndSpent after the restart = %d, want 1 (the failed hop)", n)
	}
	if diff := cmp.Diff(sorted(root, a, b, waits), liveIDs(restored)); diff != "" {
		t.Errorf("live threads after EndSpent (-want +got):\n%s", diff)
	}
	if err := restored.End(waits); err != nil {
		t.Fatal(err)
	}
	if n := restored.EndSpent(root, nil); n != 2 {
		t.Errorf("EndSpent once the awaiting thread ended = %d, want 2 (a and b)", n)
	}
	if diff := cmp.Diff([]string{root}, liveIDs(restored)); diff != "" {
		t.Errorf("live threads after the chain ended (-want +got):\n%s", diff)
	}
}

// sorted returns ids sorted.
func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}
