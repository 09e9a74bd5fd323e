package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkThreadWalk measures a filtered page of threads (30 of them) over
// journals of 10,000 and 100,000 entries of five a thread (as
// BenchmarkThreadSummaries), one thread in 200 addressed to "auditor":
// grouping the whole journal (Threads with a filter, what GET
// /api/v1/threads did) against walking it backwards (WalkThreads) until
// the page is full, or until the scan budget of a cursor page is spent;
// and a filter nothing matches, which walks the whole journal unless a
// budget bounds it. XMLPIPE_THREADWALK_ROWS sets another journal length.
func BenchmarkThreadWalk(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("XMLPIPE_THREADWALK_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("XMLPIPE_THREADWALK_ROWS=%q: want a number >= 1000", v)
		}
		sizes = []int{n}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s, _ := openTest(b, Options{})
			for i := range n {
				t := i/5 + i%2
				e := testEntry(i, fmt.Sprintf("thread-%d", t))
				e.Conversation = fmt.Sprintf("conv-%d", t/2)
				e.From, e.To = fmt.Sprintf("agent-%d", i%4), fmt.Sprintf("agent-%d", (i+1)%4)
				if i%1000 == 0 {
					e.To = "auditor"
				}
				if err := s.Append(e); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			rare := ThreadFilter{Participant: "auditor"}
			none := ThreadFilter{Since: time.Now().Add(24 * time.Hour)}
			page := func(f ThreadFilter, budget, want int) func(b *testing.B) {
				return func(b *testing.B) {
					for b.Loop() {
						kept := 0
						_, err := s.WalkThreads(ThreadWalk{Budget: budget, Want: want, Filter: f},
							func(sums []ThreadSummary, _ map[string][]Entry) (bool, error) {
								kept += len(sums)
								return kept >= 30, nil
							})
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			group := func(f ThreadFilter) func(b *testing.B) {
				return func(b *testing.B) {
					for b.Loop() {
						if _, err := s.Threads(30, 0, f); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.Run("rare/grouping", group(rare))
			b.Run("rare/walk", page(rare, 0, 30))
			b.Run("rare/walk-budget", page(rare, 16384, 30)) // a cursor page of GET /api/v1/threads
			b.Run("none/grouping", group(none))
			b.Run("none/walk", page(none, 0, 30))
			b.Run("none/walk-budget", page(none, 16384, 30))
		})
	}
}
