package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWaitDurableCutsTheBatchDelay: with a batch delay of an hour, an entry
// would never be committed in a test; a waiter makes the writer commit at
// once, and Durable reports the entry's seq once WaitDurable returns.
func TestWaitDurableCutsTheBatchDelay(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour})
	if got := s.Assigned(); got != 0 {
		t.Fatalf("Assigned on an empty journal = %d, want 0", got)
	}
	seq, err := s.AppendSeq(testEntry(0, "t"))
	must(t, err)
	if s.Assigned() != seq {
		t.Fatalf("Assigned = %d, want %d", s.Assigned(), seq)
	}
	if s.Durable() >= seq {
		t.Fatalf("Durable = %d before any commit of seq %d", s.Durable(), seq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(t, s.WaitDurable(ctx, seq))
	if s.Durable() < seq {
		t.Fatalf("Durable = %d after WaitDurable(%d)", s.Durable(), seq)
	}
	if n, err := s.Count(); err != nil || n != 1 {
		t.Fatalf("Count after WaitDurable = %d, %v; want the entry committed", n, err)
	}
}

// TestWaitDurableManyWaiters: concurrent appenders each wait for their own
// seq; every wait returns with its entry readable, sharing commits.
func TestWaitDurableManyWaiters(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour})
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := s.AppendSeq(testEntry(i, "t"))
			if err == nil {
				err = s.WaitDurable(context.Background(), seq)
			}
			if err == nil && s.Durable() < seq {
				err = errors.New("Durable below a waited seq")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	st := s.Stats()
	if st.Commits > n {
		t.Errorf("%d commits for %d waiters", st.Commits, n)
	}
	if st.Commits > 0 && st.CommitTime <= 0 {
		t.Errorf("%d commits took %v", st.Commits, st.CommitTime)
	}
}

// TestWaitDurableFailedAppend: the waiter of an append the writer refused
// learns that its entry is not on disk; later entries still commit.
func TestWaitDurableFailedAppend(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	bad, err := s.prepareEntry(testEntry(1, "t"))
	must(t, err)
	bad.Kind = 0
	o := op{kind: opAppend, name: "append", entry: bad}
	must(t, s.enqueueAsync(&o))
	good, err := s.AppendSeq(testEntry(2, "t"))
	must(t, err)
	ctx := context.Background()
	if err := s.WaitDurable(ctx, good); err != nil {
		t.Fatalf("WaitDurable(good) = %v", err)
	}
	if err := s.WaitDurable(ctx, o.entry.Seq); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("WaitDurable(refused seq %d) = %v, want ErrWriteFailed", o.entry.Seq, err)
	}
	_ = s.Flush(ctx) // collects the asynchronous failure
}

// TestWaitDurableEnds: a waiter returns with ctx's error, and with
// ErrClosed once the store closes.
func TestWaitDurableEnds(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.WaitDurable(ctx, s.Assigned()+5); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitDurable with a cancelled context = %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitDurable(context.Background(), s.Assigned()+5) }()
	must(t, s.Close())
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitDurable across Close = %v, want ErrClosed", err)
	}
}

// TestUndeliveredAfterPages: the undelivered backlog comes a page at a time
// in seq order, each entry owning its bytes, and Each visits every entry.
func TestUndeliveredAfterPages(t *testing.T) {
	s, _ := openTest(t, Options{})
	var seqs []int64
	for i := range 10 {
		seq, err := s.AppendSeq(testEntry(i, "t"))
		must(t, err)
		seqs = append(seqs, seq)
	}
	must(t, s.MarkDelivered(seqs[2]))
	flush(t, s)
	var got []int64
	after := int64(0)
	for {
		page, err := s.UndeliveredAfter(after, 3)
		must(t, err)
		if len(page) == 0 {
			break
		}
		if len(page) > 3 {
			t.Fatalf("page of %d entries, limit 3", len(page))
		}
		for _, e := range page {
			got = append(got, e.Seq)
			if want := testEntry(int(e.Seq-1), "t").Bytes; string(e.Bytes) != string(want) {
				t.Fatalf("seq %d bytes = %q", e.Seq, e.Bytes)
			}
		}
		after = page[len(page)-1].Seq
	}
	want := append(append([]int64{}, seqs[:2]...), seqs[3:]...)
	if len(got) != len(want) {
		t.Fatalf("undelivered pages = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("undelivered pages = %v, want %v", got, want)
		}
	}
	if _, err := s.UndeliveredAfter(0, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("UndeliveredAfter with limit 0 = %v, want ErrInvalid", err)
	}
	n := 0
	must(t, s.Each(4, func(e *Entry) error {
		if e.Seq <= 4 {
			t.Errorf("Each(4) visited seq %d", e.Seq)
		}
		n++
		return nil
	}))
	if n != 6 {
		t.Errorf("Each(4) visited %d entries, want 6", n)
	}
}

// TestWaitDurableDiskFull: on a full disk the tombstone of a failed append
// cannot be committed either; the append's waiter still learns at once that
// its entry is not on disk instead of waiting until its deadline (an
// acknowledgement that never came: inject hung until the client gave up).
func TestWaitDurableDiskFull(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, s.WaitDurable(ctx, mustAppendSeq(t, s, testEntry(0, "t"))))
	// The disk is full: no page may be added to the database any more, and
	// not even the few bytes of a tombstone fit (a WAL that cannot grow).
	_, err := s.do(ctx, "fill the disk", func(w *writer) (int64, error) {
		if _, err := w.exec(`CREATE TRIGGER disk_full BEFORE INSERT ON journal_tombstones
			BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
			return 0, err
		}
		pages, err := w.queryInt64s(`PRAGMA page_count`)
		if err != nil || len(pages) != 1 {
			return 0, fmt.Errorf("page_count: %v %w", pages, err)
		}
		return w.exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages[0]))
	})
	must(t, err)
	big := testEntry(1, "t")
	big.Bytes = fmt.Appendf(nil, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>greeter</from><thread>t</thread></meta><Greeting><Name>%s</Name></Greeting></message>`,
		strings.Repeat("x", 256<<10))
	seq := mustAppendSeq(t, s, big)
	if err := s.WaitDurable(ctx, seq); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("WaitDurable(seq %d) on a full disk = %v, want ErrWriteFailed", seq, err)
	}
	_ = s.Flush(ctx) // collects the asynchronous failure
}

// mustAppendSeq appends e and returns its seq.
func mustAppendSeq(t *testing.T, s *Store, e Entry) int64 {
	t.Helper()
	seq, err := s.AppendSeq(e)
	must(t, err)
	return seq
}
