package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// waitFilterLoaded waits until the store's thread filter is loaded.
func waitFilterLoaded(t testing.TB, s *Store) {
	t.Helper()
	select {
	case <-s.threads.loaded:
	case <-time.After(30 * time.Second):
		t.Fatal("the thread filter was never loaded")
	}
}

// TestThreadFilterHoldsEveryJournaledThread: after a reopen the filter
// holds every thread of the journal — those of summarised partitions
// (through journal_keys) and of the partition still open (its rows) — and
// those appended while it loads, and answers "never journaled" for almost
// every other id; no id it calls absent has entries.
func TestThreadFilterHoldsEveryJournaledThread(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir, Options{})
	var threads []string
	appendNew := func(s *Store, n int) {
		for range n {
			id := uuid.NewString()
			threads = append(threads, id)
			if err := s.Append(testEntry(len(threads), id)); err != nil {
				t.Fatal(err)
			}
		}
		flush(t, s)
	}
	waitFilterLoaded(t, s)
	appendNew(s, 2500) // two summarised partitions and part of a third
	for _, id := range threads {
		if !s.MayHaveThread(id) {
			t.Fatalf("thread %s appended to a loaded filter is called never journaled", id)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, dir, Options{})
	appendNew(s, 300) // while the filter may still be loading
	waitFilterLoaded(t, s)
	for _, id := range threads {
		if !s.MayHaveThread(id) {
			t.Fatalf("journaled thread %s is called never journaled after a reopen", id)
		}
	}
	const probes = 5000
	maybe := 0
	for i := range probes {
		id := uuid.NewString()
		if s.MayHaveThread(id) {
			maybe++
			continue
		}
		if i%50 != 0 {
			continue
		}
		if es, err := s.Thread(id); err != nil || len(es) != 0 { // a sample: each reads the journal
			t.Fatalf("thread %s called never journaled has %d entries (%v)", id, len(es), err)
		}
	}
	t.Logf("%d of %d fresh ids may have been journaled", maybe, probes)
	if maybe > probes/20 {
		t.Fatalf("%d of %d fresh ids may have been journaled, want about 1 %%", maybe, probes)
	}
}

// TestThreadFilterAnswersMaybeUntilLoaded: before its load a filter knows
// nothing, so it calls no id absent.
func TestThreadFilterAnswersMaybeUntilLoaded(t *testing.T) {
	f := newThreadFilter(0)
	if !f.mayHave(filterKey(keyThread, "never-added")) {
		t.Fatal("a filter not loaded called an id never journaled")
	}
}

// TestThreadFilterGrows: past its capacity a filter adds layers and still
// holds every id, with false "maybe"s staying rare.
func TestThreadFilterGrows(t *testing.T) {
	f := newThreadFilter(0)
	f.ready.Store(true)
	const n = 3 * minFilterIDs
	for i := range n {
		f.add(filterKey(keyThread, fmt.Sprint("in-", i)))
	}
	if got := len(*f.layers.Load()); got < 2 {
		t.Fatalf("%d layers after %d ids in a filter of %d, want more than one", got, n, minFilterIDs)
	}
	for i := range n {
		if !f.mayHave(filterKey(keyThread, fmt.Sprint("in-", i))) {
			t.Fatalf("id %d lost when the filter grew", i)
		}
	}
	maybe := 0
	for i := range 10000 {
		if f.mayHave(filterKey(keyThread, fmt.Sprint("out-", i))) {
			maybe++
		}
	}
	t.Logf("%d of 10000 ids never added may have been (%d layers)", maybe, len(*f.layers.Load()))
	if maybe > 500 {
		t.Fatalf("%d of 10000 ids never added may have been, want about 1-3 %%", maybe)
	}
}

// BenchmarkThreadOriginLookup: how the pump learns that a thread id a
// client chose was never journaled, in a journal of 200,000 rows: the
// filter, against the lookup keys it spares (Thread).
func BenchmarkThreadOriginLookup(b *testing.B) {
	s, _ := openTest(b, Options{})
	for i := range 200000 {
		if err := s.Append(testEntry(i, fmt.Sprint("thread-", i))); err != nil {
			b.Fatal(err)
		}
	}
	flush(b, s)
	waitFilterLoaded(b, s)
	b.Run("filter", func(b *testing.B) {
		for b.Loop() {
			if s.MayHaveThread(uuid.NewString()) {
				b.StopTimer() // a false "maybe" (~1 %): the caller reads the journal
				b.StartTimer()
			}
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			if es, err := s.Thread(uuid.NewString()); err != nil || len(es) != 0 {
				b.Fatal(len(es), err)
			}
		}
	})
}

// BenchmarkThreadFilterAdd: what each journal append pays for the filter
// (prepareEntry), in a layer of a million ids.
func BenchmarkThreadFilterAdd(b *testing.B) {
	f := newThreadFilter(1 << 20)
	id := uuid.NewString()
	for b.Loop() {
		f.add(filterKey(keyThread, id))
	}
}
