package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestBatchingCommitsFullBatches: with an effectively infinite BatchDelay
// the writer commits exactly one transaction per BatchRows operations.
func TestBatchingCommitsFullBatches(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	for i := range 1000 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	st := s.Stats()
	if st.Commits != 10 || st.Committed != 1000 || st.Enqueued != 1000 || st.Failed != 0 {
		t.Fatalf("stats = %+v, want 10 commits of 1000 ops", st)
	}
	n, err := s.Count()
	must(t, err)
	if n != 1000 {
		t.Fatalf("Count = %d, want 1000", n)
	}
	// A partial batch is committed by Flush, in one more transaction.
	for i := range 7 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	if st := s.Stats(); st.Commits != 11 || st.Committed != 1007 {
		t.Fatalf("stats after partial batch = %+v, want 11 commits", st)
	}
}

// TestBatchDelayCommitsWithoutFlush: a partial batch is committed once
// BatchDelay has passed, with no Flush.
func TestBatchDelayCommitsWithoutFlush(t *testing.T) {
	committed := make(chan int, 10)
	s, _ := openTest(t, Options{BatchRows: 1000, BatchDelay: 5 * time.Millisecond,
		onCommit: func(n int) { committed <- n }})
	for i := range 3 {
		must(t, s.Append(testEntry(i, "t")))
	}
	total := 0
	for total < 3 {
		select {
		case n := <-committed:
			total += n
		case <-time.After(10 * time.Second):
			t.Fatalf("no commit without Flush; committed %d of 3", total)
		}
	}
	n, err := s.Count()
	must(t, err)
	if n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
}

// TestFlushWaitsForEarlierWrites: Flush blocks behind a busy writer and
// honours its context; once the writer proceeds, every earlier write is
// visible.
func TestFlushWaitsForEarlierWrites(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 1})
	started, release := make(chan struct{}), make(chan struct{})
	must(t, s.async("block", func(*writer) (int64, error) {
		close(started)
		<-release
		return 0, nil
	}))
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush with cancelled context behind a blocked writer = %v, want context.Canceled", err)
	}
	must(t, s.Append(testEntry(99, "last")))
	close(release)
	flush(t, s)
	got, err := s.Thread("last")
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("entry appended before Flush not visible after it: %v", got)
	}
}

// TestQueueBackpressure: a full queue blocks enqueueing; AppendSync gives
// up when its context ends.
func TestQueueBackpressure(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 1, QueueSize: 1})
	started, release := make(chan struct{}), make(chan struct{})
	must(t, s.async("block", func(*writer) (int64, error) {
		close(started)
		<-release
		return 0, nil
	}))
	<-started
	must(t, s.Append(testEntry(1, "t"))) // fills the queue
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.AppendSync(ctx, testEntry(2, "t")); !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendSync on a full queue = %v, want context.Canceled", err)
	}
	close(release)
	flush(t, s)
	if n, _ := s.Count(); n != 1 {
		t.Fatalf("Count = %d, want 1 (the cancelled append never entered the queue)", n)
	}
}

var errBoom = errors.New("boom")

// TestAsyncErrorIsolatedAndReported: one failing operation fails alone (the
// rest of its batch is retried and committed, seqs stay contiguous) and its
// error is returned by the next Flush, once.
func TestAsyncErrorIsolatedAndReported(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	for i := range 5 {
		must(t, s.Append(testEntry(i, "t")))
	}
	must(t, s.async("boom", func(*writer) (int64, error) { return 0, errBoom }))
	for i := range 5 {
		must(t, s.Append(testEntry(i, "u")))
	}
	err := s.Flush(context.Background())
	if !errors.Is(err, ErrWriteFailed) || !errors.Is(err, errBoom) {
		t.Fatalf("Flush = %v, want ErrWriteFailed wrapping errBoom", err)
	}
	flush(t, s) // reported once
	entries, err := s.After(0, 0)
	must(t, err)
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d: gap after a rolled-back batch", i, e.Seq)
		}
	}
	if len(entries) != 10 {
		t.Fatalf("committed %d entries, want 10", len(entries))
	}
	st := s.Stats()
	if st.Failed != 1 || st.Rollbacks < 2 || st.Committed != 10 {
		t.Fatalf("stats = %+v, want 1 failed op, rollbacks, 10 committed", st)
	}
	rep, err := s.Verify(context.Background(), nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Verify: %v", rep.Faults)
	}
}

// TestJournalInsertConstraintIsolated: a row that fails a CHECK constraint
// inside a multi-row journal insert (INSERT OR ROLLBACK, which ends the whole
// transaction) fails alone: the batch's other appends are retried one by one
// and committed, the bad seq is tombstoned, and the journal verifies.
func TestJournalInsertConstraintIsolated(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	for i := range 3 {
		must(t, s.Append(testEntry(i, "t")))
	}
	bad, err := s.prepareEntry(testEntry(3, "t"))
	must(t, err)
	bad.Direction = Direction(9) // stored as "Direction(9)": the CHECK rejects it
	must(t, s.enqueueAsync(&op{kind: opAppend, name: "append", entry: bad}))
	for i := range 3 {
		must(t, s.Append(testEntry(i, "u")))
	}
	if err := s.Flush(context.Background()); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("Flush = %v, want ErrWriteFailed", err)
	}
	entries, err := s.After(0, 0)
	must(t, err)
	var seqs []int64
	for _, e := range entries {
		seqs = append(seqs, e.Seq)
	}
	if diff := cmp.Diff([]int64{1, 2, 3, 5, 6, 7}, seqs); diff != "" {
		t.Fatalf("committed seqs (-want +got):\n%s", diff)
	}
	rep, err := s.Verify(context.Background(), nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Verify: %v", rep.Faults)
	}
}

// TestSyncErrorIsolated: a failing synchronous op gets its own error while
// the asynchronous ops around it commit.
func TestSyncErrorIsolated(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	for i := range 3 {
		must(t, s.Append(testEntry(i, "t")))
	}
	if _, err := s.do(context.Background(), "boom", func(*writer) (int64, error) { return 0, errBoom }); !errors.Is(err, errBoom) {
		t.Fatalf("sync op = %v, want errBoom", err)
	}
	flush(t, s)
	if n, _ := s.Count(); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
}

func TestCloseReturnsPendingErrors(t *testing.T) {
	s, _ := openTest(t, Options{})
	must(t, s.async("boom", func(*writer) (int64, error) { return 0, errBoom }))
	if err := s.Close(); !errors.Is(err, errBoom) {
		t.Fatalf("Close = %v, want errBoom", err)
	}
}

// TestConcurrentAppendSync: concurrent callers get distinct, gap-free seqs
// and share commits.
func TestConcurrentAppendSync(t *testing.T) {
	s, _ := openTest(t, Options{})
	const workers, each = 8, 50
	seqs := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				seq, err := s.AppendSync(context.Background(), testEntry(i, string(rune('a'+g))))
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	seen := map[int64]bool{}
	for seq := range seqs {
		if seen[seq] {
			t.Fatalf("seq %d returned twice", seq)
		}
		seen[seq] = true
	}
	for i := int64(1); i <= workers*each; i++ {
		if !seen[i] {
			t.Fatalf("seq %d never returned", i)
		}
	}
	t.Logf("%d AppendSync calls in %d commits", workers*each, s.Stats().Commits)
}
