package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestQueuedMarks: delivery marks travel beside the write queue
// (markQueue) and still follow their appends: with batches of one op, a
// mark reaches the writer before its append is applied and is carried
// until it is; Flush commits every mark made before it; the marks of a
// batch take one queued op, not one each; and a batch that fails because
// of one of its appends still records its marks (retried after the ops).
func TestQueuedMarks(t *testing.T) {
	ctx := context.Background()
	t.Run("carried behind their appends", func(t *testing.T) {
		s, _ := openTest(t, Options{BatchRows: 1, BatchDelay: time.Hour})
		for i := range 50 {
			seq, err := s.AppendSeq(testEntry(i, "t"))
			must(t, err)
			must(t, s.MarkDelivered(seq))
		}
		flush(t, s)
		if got := undeliveredSeqs(t, s.Reader); len(got) != 0 {
			t.Errorf("Undelivered = %v after Flush, want none", got)
		}
		st := s.Stats()
		if st.Enqueued != 100 || st.Committed != 100 || st.Failed != 0 {
			t.Errorf("Stats = %+v, want 100 writes enqueued and committed", st)
		}
	})
	t.Run("one op for a batch of marks", func(t *testing.T) {
		s, _ := batchedStore(t)
		var seqs []int64
		for i := range 20 {
			seq, err := s.AppendSeq(testEntry(i, "t"))
			must(t, err)
			seqs = append(seqs, seq)
		}
		flush(t, s)
		// The writer is held in an op while the marks are made, so what
		// they queue stays in the queue.
		started, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := s.do(ctx, "hold", func(*writer) (int64, error) {
				close(started)
				<-release
				return 0, nil
			})
			held <- err
		}()
		<-started
		for _, seq := range seqs {
			must(t, s.MarkDelivered(seq))
		}
		queued := len(s.queue)
		close(release)
		must(t, <-held)
		if queued != 1 {
			t.Errorf("20 marks queued %d ops, want 1", queued)
		}
		flush(t, s)
		if got := undeliveredSeqs(t, s.Reader); len(got) != 0 {
			t.Errorf("Undelivered = %v after Flush, want none", got)
		}
	})
	t.Run("a failed batch keeps its marks", func(t *testing.T) {
		s, _ := batchedStore(t)
		for i := range 4 {
			must(t, s.Append(testEntry(i, "t")))
		}
		flush(t, s)
		// An op that fails the batch, then fails alone.
		must(t, s.async("fail", func(*writer) (int64, error) { return 0, errors.New("injected") }))
		must(t, s.MarkDelivered(2))
		must(t, s.MarkDelivered(4))
		if err := s.Flush(ctx); err == nil {
			t.Fatal("Flush reported no error for the failed op")
		}
		if d := cmp.Diff([]int64{1, 3}, undeliveredSeqs(t, s.Reader)); d != "" {
			t.Errorf("Undelivered (-want +got):\n%s", d)
		}
		if st := s.Stats(); st.Failed != 1 {
			t.Errorf("Stats = %+v, want the injected op failed alone", st)
		}
	})
}
