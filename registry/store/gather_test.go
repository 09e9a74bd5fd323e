package store

import (
	"context"
	"testing"
	"time"
)

// backlogged opens a store whose writer has just committed with an append
// still queued behind the commit (a Flush commits the test's op at once,
// which blocks the writer while the append is queued), and returns the store, the queued append's seq and the
// commits the writer makes from then on.
func backlogged(t *testing.T, opts Options) (*Store, int64, <-chan int) {
	t.Helper()
	commits := make(chan int, 64)
	opts.onCommit = func(n int) { commits <- n }
	s, _ := openTest(t, opts)
	started, release := make(chan struct{}), make(chan struct{})
	must(t, s.async("block", func(*writer) (int64, error) {
		close(started)
		<-release
		return 0, nil
	}))
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(context.Background()) }() // commits the op at once
	<-started
	seq, err := s.AppendSeq(testEntry(0, "t"))
	must(t, err)
	close(release)
	if n := <-commits; n != 1 {
		t.Fatalf("the blocking op committed with %d ops, want 1", n)
	}
	must(t, <-flushed)
	return s, seq, commits
}

// hurry calls WaitDurable(seq) in a goroutine and returns its outcome's
// channel.
func hurry(t *testing.T, s *Store, seq int64) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	go func() { done <- s.WaitDurable(ctx, seq) }()
	return done
}

// TestBusyGatherFillsAHurriedBatch: when the previous commit left an
// append queued, a batch a WaitDurable caller hurries gathers what arrives
// next (here until it is full) instead of committing the one append alone.
func TestBusyGatherFillsAHurriedBatch(t *testing.T) {
	const rows = 8
	s, seq, commits := backlogged(t, Options{BatchRows: rows, BatchDelay: time.Hour, BusyGather: time.Hour})
	done := hurry(t, s, seq)
	// The writer, gathering, wakes when a full batch is queued (nudge):
	// 2×rows appends queue one whatever it has drained meanwhile.
	for i := 1; i <= 2*rows; i++ {
		must(t, s.Append(testEntry(i, "t")))
	}
	if n := <-commits; n != rows {
		t.Fatalf("the hurried batch committed with %d ops, want the %d that arrived while it gathered", n, rows)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitDurable = %v", err)
	}
}

// TestBusyGatherOff: with BusyGather negative, the same hurried batch
// commits at once, though it is not full and its delay is an hour.
func TestBusyGatherOff(t *testing.T) {
	s, seq, commits := backlogged(t, Options{BatchRows: 8, BatchDelay: time.Hour, BusyGather: -1})
	if err := <-hurry(t, s, seq); err != nil {
		t.Fatalf("WaitDurable = %v", err)
	}
	if n := <-commits; n != 1 {
		t.Fatalf("the hurried batch committed with %d ops, want 1", n)
	}
}

// TestBusyGatherNeverHoldsALoneWaiter: a waiter whose appends are the only
// writes (each commit leaves nothing queued) is never held, however long
// BusyGather is.
func TestBusyGatherNeverHoldsALoneWaiter(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 8, BatchDelay: time.Hour, BusyGather: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 20 {
		seq, err := s.AppendSeq(testEntry(i, "t"))
		must(t, err)
		if err := s.WaitDurable(ctx, seq); err != nil {
			t.Fatalf("WaitDurable of append %d = %v: the writer held a lone waiter", i, err)
		}
	}
}

// TestCloseCommitsABatchWaitingOutItsDelay: Close commits a batch that
// waits out an hour's batch delay, whether the writer sees the store close
// before or after its queue closes (Close closes one, then the other).
func TestCloseCommitsABatchWaitingOutItsDelay(t *testing.T) {
	dir := t.TempDir()
	for round := range 30 {
		s, err := Open(dir, Options{BatchDelay: time.Hour, Logger: quietLogger()})
		must(t, err)
		for i := range 3 {
			must(t, s.Append(testEntry(3*round+i, "t")))
		}
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case err := <-closed:
			must(t, err)
		case <-time.After(time.Minute):
			t.Fatalf("round %d: Close still waits after a minute", round)
		}
	}
	s := openAt(t, dir, Options{})
	if n, err := s.Count(); err != nil || n != 90 {
		t.Fatalf("Count = %d, %v; want the 90 appends committed at Close", n, err)
	}
}
