package pump

import (
	"math/rand/v2"
	"runtime"
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

// TestSchedQueuePushReportsWokenWorker: push reports a woken worker only when
// one was blocked in pop and the queue is not paused.
func TestSchedQueuePushReportsWokenWorker(t *testing.T) {
	q := newSchedQueue(BreadthFirst)
	if ok, woke := q.push(&delivery{conv: "a"}); !ok || woke {
		t.Fatalf("push with no worker waiting = (%v, %v), want (true, false)", ok, woke)
	}
	if _, ok := q.pop(); !ok {
		t.Fatal("pop of a queued item failed")
	}

	popped := make(chan *delivery)
	go func() {
		d, _ := q.pop()
		popped <- d
	}()
	waitIdle(t, q, 1)
	want := &delivery{conv: "b"}
	if ok, woke := q.push(want); !ok || !woke {
		t.Fatalf("push with a worker waiting = (%v, %v), want (true, true)", ok, woke)
	}
	if got := <-popped; got != want {
		t.Fatalf("the waiting worker popped %+v, want %+v", got, want)
	}

	q.setPaused(true)
	go func() {
		d, _ := q.pop()
		popped <- d
	}()
	waitIdle(t, q, 1)
	if ok, woke := q.push(&delivery{conv: "c"}); !ok || woke {
		t.Fatalf("push to a paused queue = (%v, %v), want (true, false)", ok, woke)
	}
	q.setPaused(false)
	<-popped

	q.close()
	if ok, woke := q.push(&delivery{conv: "d"}); ok || woke {
		t.Fatalf("push to a closed queue = (%v, %v), want (false, false)", ok, woke)
	}
}

// waitIdle waits until n workers are blocked in q.pop.
func waitIdle(t *testing.T, q *schedQueue, n int) {
	t.Helper()
	for {
		q.mu.Lock()
		idle := q.idle
		q.mu.Unlock()
		if idle == n {
			return
		}
		runtime.Gosched()
	}
}
