package store

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rowsBy sums, over the statements s ran whose text begins with prefix,
// the rows they changed.
func rowsBy(s *Store, prefix string) int64 {
	var n int64
	for _, c := range s.StatementCounts() {
		if strings.HasPrefix(c.Query, prefix) {
			n += c.Rows
		}
	}
	return n
}

// TestKernelFreshRowsInserted: the rows of threads and histories begun in
// a batch (CreateThread, AppendSlot at index 0, and their later slots and
// segments) are inserted with INSERT OR ROLLBACK, which needs no statement
// journal; rows that may be committed already (PutThread, PutSlot) are
// still upserted with INSERT OR REPLACE, and replace what was committed.
func TestKernelFreshRowsInserted(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	s, _ := batchedStore(t)
	must(t, s.PutThread(f.thread("old", "org", "a")))
	must(t, s.PutSlot(f.slot("old", 0, "<old/>")))
	flush(t, s)

	before := map[string]int64{}
	prefixes := []string{"INSERT OR REPLACE INTO threads", "INSERT OR ROLLBACK INTO threads",
		"INSERT OR REPLACE INTO slots", "INSERT OR ROLLBACK INTO slots",
		"INSERT OR REPLACE INTO context_segments", "INSERT OR ROLLBACK INTO context_segments"}
	for _, p := range prefixes {
		before[p] = rowsBy(s, p)
	}
	must(t, s.CreateThread(f.thread("new", "org")))
	must(t, s.AppendSlot(f.slot("new", 0, "<a/>")))
	must(t, s.AppendSlot(f.slot("new", 1, "<b/>")))
	must(t, s.PutSegment(SegmentRow{Thread: "new", Index: 0, Slots: []int{0}, Tier: "folded", Summary: "s", Changed: f.at}))
	must(t, s.PutThread(f.thread("old", "org", "b")))
	must(t, s.PutSlot(f.slot("old", 0, "<new/>")))
	flush(t, s)

	got := map[string]int64{}
	for _, p := range prefixes {
		got[p] = rowsBy(s, p) - before[p]
	}
	want := map[string]int64{
		"INSERT OR REPLACE INTO threads": 1, "INSERT OR ROLLBACK INTO threads": 1,
		"INSERT OR REPLACE INTO slots": 1, "INSERT OR ROLLBACK INTO slots": 2,
		"INSERT OR REPLACE INTO context_segments": 0, "INSERT OR ROLLBACK INTO context_segments": 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows written per statement (-want +got):\n%s", d)
	}
	wantState := kernelState{
		Threads: []ThreadRow{f.thread("new", "org"), f.thread("old", "org", "b")},
		Slots:   []SlotRow{f.slot("new", 0, "<a/>"), f.slot("new", 1, "<b/>"), f.slot("old", 0, "<new/>")},
	}
	if d := cmp.Diff(wantState, loadKernel(t, s)); d != "" {
		t.Errorf("kernel state (-want +got):\n%s", d)
	}
}

// TestKernelFreshRowCommittedAlready: a thread created (CreateThread)
// while a row of its id is committed — a caller breaking CreateThread's
// contract — fails alone, and loudly: its batch is retried op by op, the
// other writes of the batch commit, the committed row is left as it was
// and the failure is reported by the next Flush.
func TestKernelFreshRowCommittedAlready(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	s, _ := openTest(t, Options{BatchRows: 100000, BatchDelay: time.Hour, Logger: quietLogger()})
	must(t, s.PutThread(f.thread("dup", "org", "first")))
	flush(t, s)

	must(t, s.CreateThread(f.thread("ok", "org")))
	must(t, s.CreateThread(f.thread("dup", "org", "second")))
	must(t, s.AppendSlot(f.slot("ok", 0, "<a/>")))
	if err := s.Flush(t.Context()); err == nil {
		t.Error("Flush after a failed create: nil error, want the failure")
	}
	want := kernelState{
		Threads: []ThreadRow{f.thread("dup", "org", "first"), f.thread("ok", "org")},
		Slots:   []SlotRow{f.slot("ok", 0, "<a/>")},
	}
	if d := cmp.Diff(want, loadKernel(t, s)); d != "" {
		t.Errorf("kernel state (-want +got):\n%s", d)
	}
}
