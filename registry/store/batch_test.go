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
		// BEGIN, enter the three names (2 + 1 rows) and the route, INSERT
		// the row, register the listener (its first entry since Open),
		// UPDATE high-water mark, COMMIT.
		{name: "one append", appends: 1, want: 8},
		// A hundred appends take three INSERTs (64 + 32 + 4 rows), and the
		// marks none: in-order deliveries only move the watermark. The
		// names take two, the route one.
		{name: "hundred appends and marks", appends: 100, marks: 100, want: 10},
		// 1034 appends take 18 INSERTs (16 × 64 + 8 + 2 rows); they close
		// partition 0, whose lookup keys take SAVEPOINT, a query, an
		// INSERT and RELEASE; the names take two INSERTs, the route one.
		{name: "a partition and more", appends: partitionSize + 10, want: 29},
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

// TestAppendOutOfSequence: an append whose seq is not above every seq the
// journal holds (only possible if something other than the store wrote
// the journal) fails alone; the batch's other appends are retried one by
// one and commit.
func TestAppendOutOfSequence(t *testing.T) {
	s, _ := batchedStore(t)
	for i := range 3 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	stale, err := s.prepareEntry(testEntry(9, "stale"))
	must(t, err)
	stale.Seq = 2
	for i := range 2 {
		must(t, s.Append(testEntry(i, "u")))
	}
	s.mu.RLock()
	err = s.send(context.Background(), &op{kind: opAppend, name: "append", entry: stale})
	s.mu.RUnlock()
	must(t, err)
	must(t, s.Append(testEntry(2, "u")))
	if err := s.Flush(context.Background()); !errors.Is(err, errOutOfSequence) {
		t.Fatalf("Flush = %v, want errOutOfSequence", err)
	}
	entries, err := s.After(0, 0)
	must(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%d %s", e.Seq, e.Thread))
	}
	if d := cmp.Diff([]string{"1 t", "2 t", "3 t", "4 u", "5 u", "6 u"}, got); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
}
