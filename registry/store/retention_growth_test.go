package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestRetentionReusesSpace journals, delivers and prunes
// (prune_on_delivery) a batch of 1.6 KiB envelopes per cycle, as an
// organism under steady traffic does between sweeps, and checks that the
// database file does not grow by what was pruned: the pages a sweep frees
// go to SQLite's freelist and the next cycle's rows reuse them (the
// freelist does not grow), so the file grows only by the tombstones that
// keep each pruned entry's metadata (~150 bytes an entry measured, 30
// cycles of 2,000 entries: 275 → 809 pages of 16 KiB, 217 free throughout).
func TestRetentionReusesSpace(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	pad := strings.Repeat("x", 1500)
	policy := func(string, string) Retention { return Retention{Policy: PruneOnDelivery} }
	const cycles, perCycle, warm = 12, 1000, 3
	var pages0, free0, pageSize int64
	must(t, s.rdb.QueryRow(`PRAGMA page_size`).Scan(&pageSize))
	for cycle := range cycles {
		for i := range perCycle {
			e := testEntry(i, fmt.Sprintf("th-%d-%d", cycle, i%50))
			e.Bytes = []byte(strings.Replace(string(e.Bytes), "</Name>", pad+"</Name>", 1))
			seq, err := s.AppendSeq(e)
			must(t, err)
			must(t, s.MarkDelivered(seq))
		}
		must(t, s.Flush(ctx))
		n, err := s.Sweep(ctx, policy)
		must(t, err)
		if n != perCycle {
			t.Fatalf("cycle %d pruned %d entries, want %d", cycle, n, perCycle)
		}
		must(t, s.Flush(ctx))
		var pages, free int64
		must(t, s.rdb.QueryRow(`PRAGMA page_count`).Scan(&pages))
		must(t, s.rdb.QueryRow(`PRAGMA freelist_count`).Scan(&free))
		t.Logf("cycle %2d: %4d pages, %4d free", cycle, pages, free)
		if cycle == warm {
			pages0, free0 = pages, free
		}
		if cycle > warm && free > free0+64 {
			t.Errorf("cycle %d: %d free pages against %d after cycle %d: pruned space is not reused", cycle, free, free0, warm)
		}
		if last := cycle == cycles-1; last {
			perEntry := (pages - pages0) * pageSize / int64((cycles-1-warm)*perCycle)
			t.Logf("the file grew %d bytes per pruned entry of %d", perEntry, len(pad)+200)
			if perEntry > 400 {
				t.Errorf("the file grew %d bytes per pruned entry; want the tombstone's metadata (< 400)", perEntry)
			}
		}
	}
}
