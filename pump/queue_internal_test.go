package pump

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestItemHeapOrder: pops come out in (key, seq) order under random
// interleavings of pushes and pops.
func TestItemHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var h itemHeap
		var ref []item
		var seq uint64
		for range r.IntN(200) + 1 {
			if len(h) > 0 && r.IntN(3) == 0 {
				got := h.pop()
				slices.SortFunc(ref, func(a, b item) int {
					if a.key != b.key {
						return int(a.key - b.key)
					}
					return int(a.seq) - int(b.seq)
				})
				want := ref[0]
				ref = ref[1:]
				if got.key != want.key || got.seq != want.seq {
					t.Fatalf("round %d: pop (%d,%d), want (%d,%d)", round, got.key, got.seq, want.key, want.seq)
				}
				continue
			}
			seq++
			it := item{key: int64(r.IntN(10)), seq: seq}
			h.push(it)
			ref = append(ref, it)
		}
	}
}
