package store

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSegments: segment rows are upserted by (thread, index), survive a
// reopen exactly, go with DeleteSegments, and bad rows are refused.
func TestSegments(t *testing.T) {
	s, dir := openTest(t, Options{})
	at := time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC)
	seg := func(thread string, i int, tier string) SegmentRow {
		return SegmentRow{Thread: thread, Index: i, Slots: []int{i, i + 2, i + 5}, ContentType: "tool_call", Tier: tier,
			Relevance: 0.25, Scored: true, Summary: "called calculate: 6*7 → 42 — Grüße ✓", SummaryBy: "extractive",
			Bytes: 1234, Tokens: 310, Changed: at}
	}
	must(t, s.PutSlot(SlotRow{Thread: "t1", Index: 0, Raw: []byte("x")}))
	must(t, s.PutSegment(seg("t1", 0, "folded")))
	must(t, s.PutSegment(seg("t1", 3, "evicted")))
	must(t, s.PutSegment(seg("t2", 0, "folded")))
	must(t, s.PutSegment(seg("t1", 0, "expanded"))) // replaces
	must(t, s.DeleteSegments("t2"))
	flush(t, s)
	want := []SegmentRow{seg("t1", 0, "expanded"), seg("t1", 3, "evicted")}
	got, err := s.LoadSegments()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LoadSegments (-want +got):\n%s", d)
	}
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	got, err = s.LoadSegments()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after reopen (-want +got):\n%s", d)
	}
	for _, bad := range []SegmentRow{
		{Index: 0, Slots: []int{0}, Tier: "folded"},
		{Thread: "t", Index: -1, Slots: []int{-1}, Tier: "folded"},
		{Thread: "t", Index: 0, Slots: []int{0}, Tier: "gone"},
		{Thread: "t", Index: 0, Slots: []int{1}, Tier: "folded"},
		{Thread: "t", Index: 0, Tier: "folded"},
		{Thread: "t", Index: 0, Slots: []int{0}, Tier: "folded", Relevance: math.NaN()},
		{Thread: "t", Index: 0, Slots: []int{0}, Tier: "folded", Relevance: 2},
	} {
		if err := s.PutSegment(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutSegment(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestSegmentWritesCoalesce: segment writes are kernel-state writes. A
// thread begun and ended inside one batch, segments included, changes no
// row; and the ends of many threads (slots, segments and thread rows each)
// take a fixed number of statements, not some per thread: a thread's end
// does not cut its batch into runs.
func TestSegmentWritesCoalesce(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	seg := func(thread string) SegmentRow {
		return SegmentRow{Thread: thread, Index: 0, Slots: []int{0}, Tier: "folded", Summary: "s", Changed: f.at}
	}
	end := func(s *Store, thread string) {
		must(t, s.DeleteSlots(thread))
		must(t, s.DeleteSegments(thread))
		must(t, s.DeleteThreads([]string{thread}))
	}
	statementsFor := func(threads int) int64 {
		s, _ := batchedStore(t)
		for i := range threads {
			id := fmt.Sprintf("old-%d", i)
			must(t, s.PutThread(f.thread(id, "org")))
			must(t, s.PutSlot(f.slot(id, 0, "<a/>")))
			must(t, s.PutSegment(seg(id)))
		}
		flush(t, s)
		changes, statements, commits := totalChanges(t, s), s.Statements(), s.Stats().Commits
		// One batch: threads begun and ended in it, and the old ones ended.
		for i := range threads {
			id := fmt.Sprintf("new-%d", i)
			must(t, s.PutThread(f.thread(id, "org")))
			must(t, s.PutSlot(f.slot(id, 0, "<b/>")))
			must(t, s.PutSegment(seg(id)))
			end(s, id)
			end(s, fmt.Sprintf("old-%d", i))
		}
		flush(t, s)
		if got := s.Stats().Commits - commits; got != 1 {
			t.Fatalf("%d threads: the batch took %d commits, want 1", threads, got)
		}
		// Each old thread had a thread row, a slot and a segment.
		if got := totalChanges(t, s) - changes; got != int64(3*threads) {
			t.Errorf("%d threads: the batch changed %d rows, want %d (the old ones' only)", threads, got, 3*threads)
		}
		if k := loadKernel(t, s); len(k.Threads)+len(k.Slots) != 0 {
			t.Errorf("%d threads: kernel state left: %+v", threads, k)
		}
		if got, err := s.LoadSegments(); err != nil || len(got) != 0 {
			t.Errorf("%d threads: segments left: %v, %v", threads, got, err)
		}
		return s.Statements() - statements
	}
	one, many := statementsFor(1), statementsFor(16)
	if many != one {
		t.Errorf("ending 16 threads took %d statements, 1 thread %d: want the same", many, one)
	}
}
