package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBatchStatements: a batch of appends and delivery marks takes a
// handful of multi-row statements, not one per operation.
func TestBatchStatements(t *testing.T) {
	tests := []struct {
		name           string
		appends, marks int
		want           int64
	}{
		// BEGIN, INSERT ×1, register the listener (its first entry since
		// Open), UPDATE high-water mark, COMMIT.
		{name: "one append", appends: 1, want: 5},
		// BEGIN, INSERT the pack, INSERT 64+32+4, register, UPDATE
		// high-water and delivery marks, COMMIT: in-order deliveries only
		// move the watermark.
		{name: "hundred appends and marks", appends: 100, marks: 100, want: 8},
		// BEGIN, INSERT the pack, INSERT 64×3, register, UPDATE, COMMIT.
		{name: "three full chunks", appends: 192, want: 8},
		// BEGIN, UPDATE delivery watermark, COMMIT.
		{name: "one mark", marks: 1, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := batchedStore(t)
			var seqs []int64
			if tt.appends < tt.marks {
				for i := range tt.marks {
					seq, err := s.AppendSeq(testEntry(i, "before"))
					must(t, err)
					seqs = append(seqs, seq)
				}
				flush(t, s)
			}
			before := s.Statements()
			for i := range tt.appends {
				seq, err := s.AppendSeq(testEntry(i, "t"))
				must(t, err)
				seqs = append(seqs, seq)
			}
			for _, seq := range seqs[:tt.marks] {
				must(t, s.MarkDelivered(seq))
			}
			flush(t, s)
			if got := s.Statements() - before; got != tt.want {
				t.Errorf("statements = %d, want %d", got, tt.want)
			}
			n, err := s.Count()
			must(t, err)
			if want := int64(max(tt.appends, tt.marks)); n != want {
				t.Errorf("Count = %d, want %d", n, want)
			}
			if marked := len(deliveredSeqs(t, s)); marked != tt.marks {
				t.Errorf("delivered = %d, want %d", marked, tt.marks)
			}
		})
	}
}

// TestBatchMarksFailAlone: in one batch, marks of seqs journaled in the
// same batch, a repeated mark and a mark of a pruned-or-marked seq commit,
// while the mark of a seq that was never journaled fails alone with
// ErrNotFound.
func TestBatchMarksFailAlone(t *testing.T) {
	s, _ := batchedStore(t)
	ctx := context.Background()
	old, err := s.AppendSeq(testEntry(0, "t"))
	must(t, err)
	must(t, s.MarkDelivered(old))
	flush(t, s)

	var seqs []int64
	for i := range 3 {
		seq, err := s.AppendSeq(testEntry(i+1, "t"))
		must(t, err)
		seqs = append(seqs, seq)
	}
	must(t, s.MarkDelivered(seqs[0]))
	must(t, s.MarkDelivered(old))       // already marked: no-op
	must(t, s.MarkDelivered(seqs[0]))   // twice in one batch
	must(t, s.MarkDelivered(seqs[2]+9)) // never journaled
	must(t, s.MarkDelivered(seqs[2]))
	if err := s.Flush(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Flush = %v, want ErrNotFound", err)
	}
	if st := s.Stats(); st.Failed != 1 {
		t.Errorf("failed ops = %d, want 1", st.Failed)
	}
	want := []int64{old, seqs[0], seqs[2]}
	if d := cmp.Diff(want, deliveredSeqs(t, s)); d != "" {
		t.Errorf("delivered seqs (-want +got):\n%s", d)
	}
	n, err := s.Count()
	must(t, err)
	if n != 4 {
		t.Errorf("Count = %d, want 4 (every append committed)", n)
	}
}

// TestImplicitSeqs: a batch binds only its first seq and lets SQLite number
// the rest; every entry still lands under the seq AppendSeq returned, and
// if SQLite would number a row differently (the journal holds a higher
// seq) the batch fails and its appends are retried one by one with
// explicit seqs.
func TestImplicitSeqs(t *testing.T) {
	ctx := context.Background()
	s, _ := batchedStore(t)
	want := map[int64]string{}
	appendAll := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			thread := fmt.Sprintf("t%d", i)
			seq, err := s.AppendSeq(testEntry(i, thread))
			must(t, err)
			want[seq] = thread
		}
		flush(t, s)
	}
	check := func() {
		t.Helper()
		entries, err := s.After(0, 0)
		must(t, err)
		got := map[int64]string{}
		for _, e := range entries {
			got[e.Seq] = e.Thread
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("journal (-want +got):\n%s", d)
		}
	}
	appendAll(0, 150) // 64+64+16 rows in three statements, one explicit seq
	check()
	rollbacks := s.Stats().Rollbacks

	// A row above the next seqs (never written by the store itself) makes
	// SQLite's numbering diverge from the assigned seqs.
	if _, err := s.do(ctx, "plant a high seq", func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO journal (seq, time_ns, thread, direction, kind, from_name, sha256, bytes)
			VALUES (1000, 1, 'planted', 'inbound', 'message', 'x', zeroblob(32), x'3c612f3e')`)
	}); err != nil {
		t.Fatal(err)
	}
	want[1000] = "planted"
	appendAll(150, 20)
	check()
	if s.Stats().Rollbacks == rollbacks {
		t.Error("the misnumbered batch was not rolled back")
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("Flush after the retried batch: %v", err)
	}
}
