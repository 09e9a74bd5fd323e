package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// TestLoadKernelRowsOrder: LoadThreads and LoadWatchers return every row in
// creation order (then by id) whether the rows were inserted in that order
// or not, and a row never carries a field of the row scanned before it
// (the loads reuse their scan targets and share equal paths).
func TestLoadKernelRowsOrder(t *testing.T) {
	at := newFakeClock().Now()
	path := []string{"org", "console", "greeter"}
	tests := []struct {
		name  string
		order []int // insertion order of the want rows, by index
	}{
		{"in order", []int{0, 1, 2, 3, 4}},
		{"reversed", []int{4, 3, 2, 1, 0}},
		{"shuffled", []int{2, 4, 0, 3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTest(t, Options{})
			threads := []ThreadRow{
				{ID: "a", Path: []string{"org"}}, // no times: first
				{ID: "b", Path: path, Created: at, Touched: at.Add(time.Hour), Ref: "call_1", Profile: "p"},
				{ID: "c", Parent: "b", Path: append(path[:3:3], "shouter"), Created: at},
				{ID: "d", Path: path, Created: at.Add(time.Nanosecond), Touched: at},
				{ID: "e", Path: path, Created: at.Add(time.Second)},
			}
			watchers := make([]WatcherRow, len(threads))
			for i, th := range threads {
				watchers[i] = WatcherRow{ID: "w" + th.ID, Thread: th.ID, Created: th.Created}
			}
			watchers[1].Issuer, watchers[1].WaitFor, watchers[1].FromListener = "greeter", "Shouted", "shouter"
			watchers[1].Description, watchers[1].Raised, watchers[1].TriggeredFrom = "wait", true, "shouter"
			for _, i := range tt.order {
				must(t, s.PutThread(threads[i]))
				must(t, s.PutWatcher(watchers[i]))
			}
			flush(t, s)
			gotT, err := s.LoadThreads()
			must(t, err)
			if d := cmp.Diff(threads, gotT); d != "" {
				t.Errorf("LoadThreads (-want +got):\n%s", d)
			}
			gotW, err := s.LoadWatchers()
			must(t, err)
			if d := cmp.Diff(watchers, gotW); d != "" {
				t.Errorf("LoadWatchers (-want +got):\n%s", d)
			}
		})
	}
}

// BenchmarkLoadThreads measures what a restart with many live threads
// spends reading them (and their watchers) back: ids in creation order (the
// organism's own) and at random (thread ids clients chose), which a table
// ordered by its key returns out of creation order.
func BenchmarkLoadThreads(b *testing.B) {
	b.Run("ids=ordered", func(b *testing.B) {
		benchLoadThreads(b, func(i int) string { return fmt.Sprintf("%08d-0000-4000-8000-000000000000", i) })
	})
	b.Run("ids=random", func(b *testing.B) { benchLoadThreads(b, func(int) string { return uuid.NewString() }) })
}

// benchLoadThreads is BenchmarkLoadThreads with the i-th thread's id from
// id; each thread and watcher is created a nanosecond after the one before.
func benchLoadThreads(b *testing.B, id func(i int) string) {
	s, _ := openTest(b, Options{})
	at := newFakeClock().Now()
	for i := range 20000 {
		id := id(i)
		must(b, s.PutThread(ThreadRow{ID: id, Path: []string{"org", "console:soak", "greeter"},
			Created: at.Add(time.Duration(i)), Touched: at}))
		must(b, s.PutWatcher(WatcherRow{ID: "w" + id, Thread: id, Issuer: "greeter", WaitFor: "ShoutedResponse",
			FromListener: "shouter", Description: "waiting for shouter", Created: at.Add(time.Duration(i))}))
	}
	flush(b, s)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.LoadThreads(); err != nil {
			b.Fatal(err)
		}
		if _, err := s.LoadWatchers(); err != nil {
			b.Fatal(err)
		}
	}
}
