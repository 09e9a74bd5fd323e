package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// deliveryWatermark reads the committed delivery watermark.
func deliveryWatermark(t testing.TB, s *Store) int64 {
	t.Helper()
	mark, err := s.queryInt(`SELECT ` + watermarkExpr)
	must(t, err)
	return mark
}

// explicitMarks reads the seqs of journal_deliveries.
func explicitMarks(t testing.TB, s *Store) []int64 {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT seq FROM journal_deliveries ORDER BY seq`)
	must(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var seq int64
		must(t, rows.Scan(&seq))
		out = append(out, seq)
	}
	must(t, rows.Err())
	return out
}

// undeliveredSeqs returns the seqs Undelivered reports.
func undeliveredSeqs(t testing.TB, r *Reader) []int64 {
	t.Helper()
	es, err := r.Undelivered()
	must(t, err)
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// TestDeliveryWatermark journals eight entries (seq 4 a huh record, seq 7 a
// message without a listener: neither is ever delivered) and marks them in
// steps, out of order, checking after each commit the watermark, the
// explicit marks above it and Undelivered — and that a reopened store
// reloads the same state and goes on from it.
func TestDeliveryWatermark(t *testing.T) {
	s, dir := openTest(t, Options{})
	for i := range 8 {
		e := testEntry(i, "t")
		switch i + 1 {
		case 4:
			e.Kind = Huh
		case 7:
			e.Listener = ""
		}
		must(t, s.Append(e))
	}
	flush(t, s)
	steps := []struct {
		name        string
		marks       []int64
		reopen      bool
		mark        int64
		explicit    []int64
		undelivered []int64
	}{
		{name: "nothing delivered", undelivered: []int64{1, 2, 3, 5, 6, 8}},
		{name: "out of order", marks: []int64{3, 2, 6}, explicit: []int64{2, 3, 6}, undelivered: []int64{1, 5, 8}},
		{name: "the gap closes", marks: []int64{1}, mark: 4, explicit: []int64{6}, undelivered: []int64{5, 8}},
		{name: "marks of entries nothing delivers are no-ops", marks: []int64{4, 7, 2}, mark: 4, explicit: []int64{6},
			undelivered: []int64{5, 8}},
		{name: "reopened", reopen: true, mark: 4, explicit: []int64{6}, undelivered: []int64{5, 8}},
		{name: "after the reopen", marks: []int64{5}, mark: 7, undelivered: []int64{8}},
		{name: "everything", marks: []int64{8}, mark: 8},
	}
	for _, st := range steps {
		if st.reopen {
			must(t, s.Close())
			s = openAt(t, dir, Options{})
		}
		for _, seq := range st.marks {
			must(t, s.MarkDelivered(seq))
		}
		flush(t, s)
		if got := deliveryWatermark(t, s); got != st.mark {
			t.Errorf("%s: watermark = %d, want %d", st.name, got, st.mark)
		}
		if d := cmp.Diff(st.explicit, explicitMarks(t, s), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: explicit marks (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.undelivered, undeliveredSeqs(t, s.Reader), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: Undelivered (-want +got):\n%s", st.name, d)
		}
	}
	// New entries are tracked from the watermark on.
	seq, err := s.AppendSync(context.Background(), testEntry(9, "t"))
	must(t, err)
	if d := cmp.Diff([]int64{seq}, undeliveredSeqs(t, s.Reader)); d != "" {
		t.Errorf("Undelivered after a new append (-want +got):\n%s", d)
	}
}

// TestDeliveryWatermarkRollback: a batch that fails (a mark of a seq never
// journaled) is retried op by op; the delivery state of the failed
// transaction is undone, so the retry records every valid mark once.
func TestDeliveryWatermarkRollback(t *testing.T) {
	s, _ := batchedStore(t)
	var seqs []int64
	for i := range 4 {
		seq, err := s.AppendSeq(testEntry(i, "t"))
		must(t, err)
		seqs = append(seqs, seq)
	}
	must(t, s.MarkDelivered(seqs[0]))
	must(t, s.MarkDelivered(seqs[2]))
	must(t, s.MarkDelivered(99)) // never journaled: fails the batch
	must(t, s.MarkDelivered(seqs[1]))
	if err := s.Flush(context.Background()); err == nil {
		t.Fatal("Flush reported no error for a mark of an unknown seq")
	}
	if mark := deliveryWatermark(t, s); mark != seqs[2] {
		t.Errorf("watermark = %d, want %d", mark, seqs[2])
	}
	if d := cmp.Diff([]int64{seqs[3]}, undeliveredSeqs(t, s.Reader)); d != "" {
		t.Errorf("Undelivered (-want +got):\n%s", d)
	}
	if m := explicitMarks(t, s); len(m) != 0 {
		t.Errorf("explicit marks below the watermark remain: %v", m)
	}
}

// TestRetentionReleasesUndelivered: an undelivered message deleted by
// retain_days no longer holds the delivery watermark back.
func TestRetentionReleasesUndelivered(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	old := testEntry(0, "t")
	old.Listener = "stale"
	first, err := s.AppendSync(ctx, old) // never delivered
	must(t, err)
	clock.Advance(48 * time.Hour)
	var later []int64
	for i := range 3 {
		seq, err := s.AppendSync(ctx, testEntry(i+1, "t"))
		must(t, err)
		later = append(later, seq)
		must(t, s.MarkDelivered(seq))
	}
	flush(t, s)
	if mark := deliveryWatermark(t, s); mark != first-1 {
		t.Fatalf("watermark = %d, want %d (held by the undelivered entry)", mark, first-1)
	}
	n, err := s.Sweep(ctx, func(l string) Retention {
		if l == "stale" {
			return Retention{Policy: RetainDays, Days: 1}
		}
		return Retention{}
	})
	must(t, err)
	if n != 1 {
		t.Fatalf("sweep deleted %d, want 1", n)
	}
	if mark := deliveryWatermark(t, s); mark != later[2] {
		t.Errorf("watermark after the sweep = %d, want %d", mark, later[2])
	}
	if m := explicitMarks(t, s); len(m) != 0 {
		t.Errorf("explicit marks below the watermark remain: %v", m)
	}
}
