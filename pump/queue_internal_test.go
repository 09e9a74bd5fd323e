package pump

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
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

// A queue sets aside the messages of a halted sender (holdFrom): pop skips
// them, len counts them, removeConv finds them, and unpark puts them back
// in their places once their sender is no longer held.
func TestSchedQueueHoldsAHaltedSender(t *testing.T) {
	var held atomic.Bool
	held.Store(true)
	q := newSchedQueue(BreadthFirst)
	q.holdFrom = func(from string) bool { return from == "loopy" && held.Load() }
	for _, d := range []*delivery{{conv: "a", from: "loopy"}, {conv: "b", from: "calm"}, {conv: "c", from: "loopy"}} {
		q.push(d)
	}
	if d, _ := q.pop(); d.conv != "b" {
		t.Fatalf("first pop %q, want b (the others' sender is held)", d.conv)
	}
	if n := q.len(); n != 2 {
		t.Fatalf("len %d, want 2 (held messages count)", n)
	}
	if ds := q.removeConv("c"); len(ds) != 1 || ds[0].conv != "c" {
		t.Fatalf("removeConv(c) = %v", ds)
	}
	if n := q.unpark(); n != 0 {
		t.Fatalf("unpark while held put back %d", n)
	}
	held.Store(false)
	if n := q.unpark(); n != 1 {
		t.Fatalf("unpark put back %d, want 1", n)
	}
	if d, _ := q.pop(); d.conv != "a" {
		t.Fatalf("pop after unpark %q, want a", d.conv)
	}
	if n := q.len(); n != 0 {
		t.Fatalf("len %d at the end", n)
	}
}
