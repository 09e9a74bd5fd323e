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

// slotWaiter is a worker waiting for a slot for its listener.
type slotWaiter struct {
	l     *listener
	ready chan struct{}
}

func newHandlerSlots(size int) *handlerSlots {
	return &handlerSlots{size: size, share: ceilDiv(size, 2)}
}

// acquire takes a slot for one handler call of l, waiting for it when l
// holds its share or every slot is taken.
func (s *handlerSlots) acquire(l *listener) {
	s.mu.Lock()
	if s.used < s.size && l.slotsHeld < s.share {
		s.used++
		l.slotsHeld++
		s.mu.Unlock()
		return
	}
	w := &slotWaiter{l: l, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	<-w.ready // the slot is taken on our behalf (grantLocked)
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
