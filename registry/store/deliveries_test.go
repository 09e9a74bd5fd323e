package store

import (
	"context"
	"slices"
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

// explicitMarks reads the marks of journal_delivered above the watermark.
func explicitMarks(t testing.TB, s *Store) []int64 {
	t.Helper()
	mark := deliveryWatermark(t, s)
	var out []int64
	for part, marks := range deliveredParts(t, s) {
		for i, c := range []byte(marks) {
			if seq := part<<journalPartitionBits | int64(i); c == '1' && seq > mark {
				out = append(out, seq)
			}
		}
	}
	slices.Sort(out)
	return out
}

// deliveredParts reads the rows of journal_delivered.
func deliveredParts(t testing.TB, s *Store) map[int64]string {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT part, marks FROM journal_delivered`)
	must(t, err)
	defer rows.Close()
	out := make(map[int64]string)
	for rows.Next() {
		var (
			part  int64
			marks string
		)
		must(t, rows.Scan(&part, &marks))
		out[part] = marks
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
	n, err := s.Sweep(ctx, func(l, _ string) Retention {
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

// TestDeliveryMarksAcrossPartitions marks entries of three journal
// partitions out of order around two undelivered ones and checks that the
// marks above the watermark survive a reopen and that the rows of the
// partitions the watermark passes are deleted.
func TestDeliveryMarksAcrossPartitions(t *testing.T) {
	s, dir := openTest(t, Options{})
	const n = 2100 // seqs 1..2100: partitions 0, 1 and 2
	for i := range n {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	held := map[int64]bool{5: true, 1500: true}
	var marked []int64
	for seq := int64(n); seq >= 1; seq-- {
		if !held[seq] {
			must(t, s.MarkDelivered(seq))
			if seq > 4 {
				marked = append(marked, seq)
			}
		}
	}
	slices.Sort(marked)
	flush(t, s)
	check := func(step string, mark int64, explicit, undelivered, parts []int64) {
		t.Helper()
		if got := deliveryWatermark(t, s); got != mark {
			t.Errorf("%s: watermark = %d, want %d", step, got, mark)
		}
		if d := cmp.Diff(explicit, explicitMarks(t, s), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: explicit marks (-want +got):\n%s", step, d)
		}
		if d := cmp.Diff(undelivered, undeliveredSeqs(t, s.Reader), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: Undelivered (-want +got):\n%s", step, d)
		}
		var got []int64
		for part := range deliveredParts(t, s) {
			got = append(got, part)
		}
		slices.Sort(got)
		if d := cmp.Diff(parts, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: journal_delivered partitions (-want +got):\n%s", step, d)
		}
	}
	check("two held back", 4, marked, []int64{5, 1500}, []int64{0, 1, 2})
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	check("reopened", 4, marked, []int64{5, 1500}, []int64{0, 1, 2})

	must(t, s.MarkDelivered(5))
	flush(t, s)
	above := slices.DeleteFunc(slices.Clone(marked), func(seq int64) bool { return seq < 1500 })
	check("the first gap closes", 1499, above, []int64{1500}, []int64{1, 2})

	must(t, s.MarkDelivered(1500))
	flush(t, s)
	// Partition 2 (seqs 2048..3071) is not wholly below the watermark yet.
	check("everything delivered", n, nil, nil, []int64{2})
}

// TestDeliveryMarksRollback: a transaction that fails after the writer set
// marks in its in-memory partitions (here the partition row's write fails)
// undoes them, so a later commit does not persist a mark whose own
// transaction failed.
func TestDeliveryMarksRollback(t *testing.T) {
	s, _ := batchedStore(t)
	ctx := context.Background()
	for i := range 6 {
		must(t, s.Append(testEntry(i, "t")))
	}
	must(t, s.MarkDelivered(2))
	must(t, s.MarkDelivered(4))
	flush(t, s)
	_, err := s.do(ctx, "inject a failure", func(w *writer) (int64, error) {
		return w.exec(`CREATE TRIGGER fail_mark_6 BEFORE UPDATE ON journal_delivered
			WHEN substr(NEW.marks, 7, 1) = '1' BEGIN SELECT RAISE(ABORT, 'injected'); END`)
	})
	must(t, err)
	must(t, s.MarkDelivered(3))
	must(t, s.MarkDelivered(6)) // fails the batch, then fails alone
	if err := s.Flush(ctx); err == nil {
		t.Fatal("Flush reported no error for a failed mark")
	}
	if d := cmp.Diff([]int64{2, 3, 4}, explicitMarks(t, s)); d != "" {
		t.Errorf("after the failure: explicit marks (-want +got):\n%s", d)
	}
	_, err = s.do(ctx, "drop the failure", func(w *writer) (int64, error) {
		return w.exec(`DROP TRIGGER fail_mark_6`)
	})
	must(t, err)
	must(t, s.MarkDelivered(5))
	flush(t, s)
	if d := cmp.Diff([]int64{2, 3, 4, 5}, explicitMarks(t, s)); d != "" {
		t.Errorf("after a later mark: explicit marks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{1, 6}, undeliveredSeqs(t, s.Reader)); d != "" {
		t.Errorf("Undelivered (-want +got):\n%s", d)
	}
}
