package pump

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// schedQueue is a listener's pipeline queue. Breadth-first serves conversations
// round-robin (the i-th queued message of a conversation is served in round i,
// never earlier than the round being served); depth-first serves the deepest
// thread first. Ties go to arrival order.
//
// Pushes never block: a new external message meeting a full queue is refused
// before it is pushed (Pump.checkRoom, ErrBusy), and internal work always
// enters, so a handler emitting into a full listener can never deadlock the
// pump.
type schedQueue struct {
	mu       sync.Mutex
	notEmpty *sync.Cond
	h        itemHeap
	policy   Scheduling
	seq      uint64
	convs    map[string]convRounds // conversations with queued items
	served   int64                 // round of the last popped item
	closed   bool
	// paused holds pops (the listener is paused), and halted (Pump.Halt);
	// close overrides both so a shutdown still drains.
	paused bool
	halted bool
	// holding is paused || halted, read without mu (Pump.Refusing).
	holding atomic.Bool
	// idle counts the workers blocked in pop.
	idle int
	// resumed counts the holds (pause, halt) released: a listener's pace
	// measured across one is not its pace (see pace.resumed).
	resumed atomic.Uint64
	// holdFrom, when set, reports whether the messages of a sender wait
	// (the sender is halted alone: Pump.HaltListener); pop sets them aside
	// in parked, with their keys, until unpark. close overrides it too.
	holdFrom func(from string) bool
	parked   []item
}

// convRounds is a conversation's breadth-first state while it has items
// queued: the round its next item gets and how many items it has queued.
type convRounds struct {
	next   int64
	queued int
}

type item struct {
	d    *delivery
	key  int64
	seq  uint64
	conv string
}

type itemHeap []item

// itemHeap is a binary min-heap ordered by (key, seq). It is written out
// rather than using container/heap, whose interface boxes every item (one
// allocation per push and per pop on the hot path).
func (h itemHeap) less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].seq < h[j].seq
}

func (h *itemHeap) push(it item) {
	*h = append(*h, it)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *itemHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = item{}
	s = s[:last]
	s.down(0)
	*h = s
	return top
}

// down moves the item at i down to its place below its parents.
func (h itemHeap) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// removeIf takes out every item for which drop holds and returns them in
// (key, seq) order; the others keep their keys and sequence numbers, so
// they come out in the same order as before.
func (h *itemHeap) removeIf(drop func(item) bool) []item {
	s := *h
	var out []item
	kept := s[:0]
	for _, it := range s {
		if drop(it) {
			out = append(out, it)
		} else {
			kept = append(kept, it)
		}
	}
	if len(out) == 0 {
		return nil
	}
	clear(s[len(kept):])
	for i := len(kept)/2 - 1; i >= 0; i-- {
		kept.down(i)
	}
	*h = kept
	slices.SortFunc(out, func(a, b item) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return out
}

func newSchedQueue(policy Scheduling) *schedQueue {
	q := &schedQueue{policy: policy, convs: map[string]convRounds{}}
	q.notEmpty = sync.NewCond(&q.mu)
	return q
}

// push enqueues d; ok is false if the queue was closed. woke reports that
// an idle worker was woken to take d (see work.wokeWorker).
func (q *schedQueue) push(d *delivery) (ok, woke bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, false
	}
	q.seq++
	it := item{d: d, seq: q.seq, conv: d.conv}
	switch q.policy {
	case DepthFirst:
		it.key = -int64(d.depth)
	default:
		c := q.convs[d.conv]
		r := max(c.next, q.served)
		q.convs[d.conv] = convRounds{next: r + 1, queued: c.queued + 1}
		it.key = r
	}
	q.h.push(it)
	q.notEmpty.Signal()
	return true, q.idle > 0 && !q.held()
}

// held reports whether pops are held (paused or halted; q.mu held).
func (q *schedQueue) held() bool { return q.paused || q.halted }

// pop blocks until an item is available; ok is false once the queue is closed
// and empty.
func (q *schedQueue) pop() (*delivery, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var it item
	for {
		for len(q.h) == 0 || q.held() && !q.closed {
			if q.closed && len(q.h) == 0 {
				return nil, false
			}
			q.idle++
			q.notEmpty.Wait()
			q.idle--
		}
		it = q.h.pop()
		if q.closed || q.holdFrom == nil || !q.holdFrom(it.d.from) {
			break
		}
		q.parked = append(q.parked, it) // its sender is halted: it waits
	}
	if q.policy != DepthFirst {
		q.served = it.key
		if c := q.convs[it.conv]; c.queued <= 1 {
			delete(q.convs, it.conv)
		} else {
			c.queued--
			q.convs[it.conv] = c
		}
	}
	return it.d, true
}

// removeConv takes every queued delivery of conversation conv out of the
// queue (a kill: see Pump.purgeKilled) and returns them in the order they
// would have been popped. The other deliveries keep their order: a
// conversation's removal neither moves them up nor back.
func (q *schedQueue) removeConv(conv string) []*delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return nil
	}
	if q.policy != DepthFirst {
		if _, queued := q.convs[conv]; !queued {
			return nil
		}
		delete(q.convs, conv)
	}
	its := q.h.removeIf(func(it item) bool { return it.conv == conv })
	if len(q.parked) > 0 {
		kept := q.parked[:0]
		for _, it := range q.parked {
			if it.conv == conv {
				its = append(its, it)
			} else {
				kept = append(kept, it)
			}
		}
		clear(q.parked[len(kept):])
		q.parked = kept
		slices.SortFunc(its, func(a, b item) int {
			if a.key != b.key {
				return cmp.Compare(a.key, b.key)
			}
			return cmp.Compare(a.seq, b.seq)
		})
	}
	out := make([]*delivery, len(its))
	for i, it := range its {
		out[i] = it.d
	}
	return out
}

func (q *schedQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.h) + len(q.parked)
}

// unpark puts back the items pop set aside whose sender's messages no
// longer wait (after a listener's halt is lifted, or for the drain of a
// close), in their places; it reports how many.
func (q *schedQueue) unpark() int {
	q.mu.Lock()
	kept := q.parked[:0]
	n := 0
	for _, it := range q.parked {
		if !q.closed && q.holdFrom != nil && q.holdFrom(it.d.from) {
			kept = append(kept, it)
			continue
		}
		q.h.push(it)
		n++
	}
	clear(q.parked[len(kept):])
	q.parked = kept
	if n > 0 {
		q.resumed.Add(1) // a hold released: the time it held says nothing of the pace
	}
	q.mu.Unlock()
	if n > 0 {
		q.notEmpty.Broadcast()
	}
	return n
}

// setPaused holds or releases pops; it reports whether the state changed.
func (q *schedQueue) setPaused(paused bool) bool {
	q.mu.Lock()
	changed := q.paused != paused
	q.paused = paused
	q.holding.Store(q.paused || q.halted)
	if changed && !paused {
		q.resumed.Add(1)
	}
	q.mu.Unlock()
	if changed && !paused {
		q.notEmpty.Broadcast()
	}
	return changed
}

func (q *schedQueue) isPaused() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.paused
}

// setHalted holds or releases pops for Halt; it reports whether the state
// changed.
func (q *schedQueue) setHalted(halted bool) bool {
	q.mu.Lock()
	changed := q.halted != halted
	q.halted = halted
	q.holding.Store(q.paused || q.halted)
	if changed && !halted {
		q.resumed.Add(1)
	}
	q.mu.Unlock()
	if changed && !halted {
		q.notEmpty.Broadcast()
	}
	return changed
}

func (q *schedQueue) isHalted() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.halted
}

// close wakes every waiter; queued items are still popped (drain).
func (q *schedQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.unpark() // drained too (dropped, when the pump keeps the halt)
	q.notEmpty.Broadcast()
}
