package store

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestBufferedMarksFollowTheQueue: a buffered delivery mark never commits
// before what was queued ahead of it. With batches of one op, an append,
// an op queued after it (the turn's other writes) and the append's mark:
// at every commit, a committed mark implies the later op was applied. The
// marks of the run take one queued op, not one each.
func TestBufferedMarksFollowTheQueue(t *testing.T) {
	var (
		s         *Store
		applied   atomic.Int64 // seqs whose following op was applied
		violation atomic.Value
		opened    = make(chan struct{})
	)
	s, _ = openTest(t, Options{BatchRows: 1, BatchDelay: time.Hour, onCommit: func(int) {
		select {
		case <-opened:
		default:
			return
		}
		// On the writer goroutine, after the commit: its delivery tracker
		// holds the committed state.
		w := s.w
		for seq := int64(1); seq <= w.high; seq++ {
			if _, open := w.deliveries.open[seq]; !open && seq > applied.Load() {
				violation.CompareAndSwap(nil, seq)
			}
		}
	}})
	close(opened)
	// Hold the writer so that everything below is queued before it runs.
	release := holdWriter(t, s)
	const n = 20
	for i := range n {
		seq, err := s.AppendSeq(testEntry(i, "t"))
		must(t, err)
		must(t, s.async("turn", func(*writer) (int64, error) {
			applied.Store(seq)
			return 0, nil
		}))
		must(t, s.MarkDelivered(seq))
	}
	if got, want := len(s.queue), 2*n; got != want {
		t.Errorf("%d appends and %d ops queued %d ops, want %d (the marks buffered)", n, n, got, want)
	}
	release()
	// No Flush: it would queue the marks itself. The writer moves them.
	deadline := time.Now().Add(30 * time.Second)
	for s.Stats().Committed < 2*n+1 || len(undeliveredSeqs(t, s.Reader)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the marks were not committed within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	flush(t, s)
	if v := violation.Load(); v != nil {
		t.Errorf("a mark committed before the op queued after its append (seq %v)", v)
	}
	if got := undeliveredSeqs(t, s.Reader); len(got) != 0 {
		t.Errorf("Undelivered = %v after Flush, want none", got)
	}
	if st := s.Stats(); st.Enqueued != 3*n+1 || st.Committed != 3*n+1 || st.Failed != 0 {
		t.Errorf("Stats = %+v, want %d writes enqueued and committed (each mark one)", st, 3*n+1)
	}
}

// TestBufferedMarksCommitUnasked: a mark made while nothing else is
// queued reaches the journal without a Flush (it wakes the idle writer),
// and marks still buffered at Close are committed by it.
func TestBufferedMarksCommitUnasked(t *testing.T) {
	t.Run("idle writer", func(t *testing.T) {
		s, _ := openTest(t, Options{BatchDelay: time.Millisecond})
		seq, err := s.AppendSeq(testEntry(0, "t"))
		must(t, err)
		flush(t, s)
		must(t, s.MarkDelivered(seq))
		deadline := time.Now().Add(30 * time.Second)
		for len(undeliveredSeqs(t, s.Reader)) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the mark was not committed within 30 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("close", func(t *testing.T) {
		s, dir := openTest(t, Options{BatchRows: 100000, BatchDelay: time.Hour})
		var seqs []int64
		for i := range 10 {
			seq, err := s.AppendSeq(testEntry(i, "t"))
			must(t, err)
			seqs = append(seqs, seq)
		}
		for _, seq := range seqs {
			must(t, s.MarkDelivered(seq))
		}
		must(t, s.Close())
		s = openAt(t, dir, Options{})
		if got := undeliveredSeqs(t, s.Reader); len(got) != 0 {
			t.Errorf("Undelivered = %v after Close, want none", got)
		}
		if err := s.MarkDelivered(seqs[0]); err != nil {
			t.Errorf("MarkDelivered after reopening: %v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, _ := openTest(t, Options{})
		seq, err := s.AppendSeq(testEntry(0, "t"))
		must(t, err)
		must(t, s.Close())
		if err := s.MarkDelivered(seq); err != ErrClosed {
			t.Errorf("MarkDelivered after Close = %v, want ErrClosed", err)
		}
	})
}

// TestBufferedMarksOverflow: once markBufferMax marks are buffered the
// marking goroutine sends them itself, so a writer that is behind does not
// let the buffer grow without bound, and nothing is lost.
func TestBufferedMarksOverflow(t *testing.T) {
	s, _ := batchedStore(t)
	n := markBufferMax + 10
	seqs := make([]int64, 0, n)
	for i := range n {
		seq, err := s.AppendSeq(testEntry(i, "t"))
		must(t, err)
		seqs = append(seqs, seq)
	}
	flush(t, s)
	release := holdWriter(t, s)
	for _, seq := range seqs {
		must(t, s.MarkDelivered(seq))
	}
	if got := len(s.queue); got != 1 {
		t.Errorf("%d marks queued %d ops, want 1", n, got)
	}
	s.marks.mu.Lock()
	left := len(s.marks.seqs)
	s.marks.mu.Unlock()
	if left != n-markBufferMax {
		t.Errorf("%d marks still buffered, want %d", left, n-markBufferMax)
	}
	release()
	flush(t, s)
	if got := undeliveredSeqs(t, s.Reader); len(got) != 0 {
		t.Errorf("Undelivered = %d entries after Flush, want none", len(got))
	}
	if d := deliveredSeqs(t, s); !slices.Equal(d, seqs) {
		t.Errorf("delivered %d seqs, want %d", len(d), len(seqs))
	}
}

// holdWriter blocks the writer inside an op until release is called, so
// that what is enqueued meanwhile stays in the queue.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, unblock, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := s.do(context.Background(), "hold", func(*writer) (int64, error) {
			close(started)
			<-unblock
			return 0, nil
		})
		held <- err
	}()
	<-started
	return func() {
		t.Helper()
		close(unblock)
		must(t, <-held)
	}
}
