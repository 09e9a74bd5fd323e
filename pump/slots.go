package pump

import "sync"

// handlerSlots are the global handler slots (max_concurrent_handlers),
// shared fairly between listeners (see Options.MaxConcurrentHandlers):
//
//   - a listener holds at most share = ceil(size/2) slots (size 1: 1), so
//     listeners whose handlers never return leave the others at least
//     size-share slots;
//   - a listener below its share takes a free slot at once; otherwise it
//     waits, and a freed slot goes to the waiting listener below its share
//     that holds the fewest slots, ties to the longest waiting.
//
// No slot stays free while a listener below its share waits (a release
// grants at once), and a waiting listener is passed over only by listeners
// holding fewer slots than it, each of which then holds one more: while
// slots are freed, every waiting listener is served.
type handlerSlots struct {
	mu      sync.Mutex
	size    int
	share   int
	used    int
	waiters []*slotWaiter // in arrival order
}

// slotWaiter is a worker waiting for a slot for its listener, to handle d
// (nil: a slot asked for no delivery).
type slotWaiter struct {
	l     *listener
	d     *delivery
	ready chan struct{}
	// withdrawn is set (before ready is closed) when the wait ended
	// without a slot: its delivery's conversation was killed (withdraw).
	withdrawn bool
}

func newHandlerSlots(size int) *handlerSlots {
	return &handlerSlots{size: size, share: ceilDiv(size, 2)}
}

// acquire takes a slot for one handler call of l, waiting for it when l
// holds its share or every slot is taken.
func (s *handlerSlots) acquire(l *listener) {
	if w := s.enter(l, nil); w != nil {
		s.wait(w)
	}
}

// enter takes a slot for a handler call of l for d at once (nil), or
// queues a waiter for one (see wait).
func (s *handlerSlots) enter(l *listener, d *delivery) *slotWaiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used < s.size && l.slotsHeld < s.share {
		s.used++
		l.slotsHeld++
		return nil
	}
	w := &slotWaiter{l: l, d: d, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	return w
}

// wait waits for w's slot: it reports true once the slot is taken on its
// behalf (grantLocked), false when the wait was withdrawn (its delivery
// is then the withdrawer's to finish).
func (s *handlerSlots) wait(w *slotWaiter) bool {
	<-w.ready
	return !w.withdrawn
}

// withdraw ends the waits for a slot of the deliveries of conversation
// conv (w only, when not nil) that are not granted yet, and returns them:
// they wait no more, hold no slot, and their deliveries are the caller's
// to finish.
func (s *handlerSlots) withdraw(conv string, w *slotWaiter) []*slotWaiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*slotWaiter
	kept := s.waiters[:0]
	for _, x := range s.waiters {
		if x.d != nil && x.d.conv == conv && (w == nil || x == w) {
			x.withdrawn = true
			close(x.ready)
			out = append(out, x)
			continue
		}
		kept = append(kept, x)
	}
	clear(s.waiters[len(kept):])
	s.waiters = kept
	return out
}

// waiting returns how many of l's deliveries wait for a slot now.
func (s *handlerSlots) waiting(l *listener) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.waiters {
		if w.l == l {
			n++
		}
	}
	return n
}

// release frees a slot of l and hands it on.
func (s *handlerSlots) release(l *listener) {
	s.mu.Lock()
	s.used--
	l.slotsHeld--
	s.grantLocked()
	s.mu.Unlock()
}

// grantLocked gives free slots to the waiting listeners below their share,
// fewest slots held first, ties in arrival order (s.mu held).
func (s *handlerSlots) grantLocked() {
	for s.used < s.size {
		best := -1
		for i, w := range s.waiters {
			if w.l.slotsHeld < s.share && (best < 0 || w.l.slotsHeld < s.waiters[best].l.slotsHeld) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.waiters[best]
		s.waiters = append(s.waiters[:best], s.waiters[best+1:]...)
		s.used++
		w.l.slotsHeld++
		close(w.ready)
	}
}

// held returns how many slots l holds now.
func (s *handlerSlots) held(l *listener) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.slotsHeld
}
