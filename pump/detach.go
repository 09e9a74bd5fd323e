package pump

import (
	"context"
	"sync"
)

// Detach frees the worker running the handler call ctx belongs to (the
// context the pump passed the handler), for a handler of a Remote listener
// that from now on only waits on another party (a federation import whose
// call left for the peer): a new worker takes the listener's next message
// at once, while the handling goes on, on the handler's goroutine, exactly
// as before — Kill, Halt, an immediate shutdown, the listener's timeout and
// CancelGrace still reach it, what it returns is processed as any
// handler's, and RemoveListener and Shutdown still wait for it. The
// listener's Workers then bound how many of its handlings run at once
// until they detach, not how many wait: calls waiting on a slow peer
// cannot hold every worker while the next call — maybe one their own
// answers wait on — waits in the queue. What waits stays bounded by the
// organism's in-flight budget (a detached handling's message counts in it
// until its handling ends).
//
// It reports whether the worker was freed: false for a listener that is not
// Remote, a handling detached already or ending, or a context the pump did
// not give a handler.
func Detach(ctx context.Context) bool {
	h, ok := ctx.Value(handlingKey{}).(*handling)
	if !ok || h == nil || h.call == nil {
		return false
	}
	return h.call.detach()
}

// detach moves the call from its worker's slot to a slot of its own among
// the listener's detached calls and starts a new worker in its worker's
// place (with WaitGroup counts of its own: the detached goroutine releases
// its worker's counts once its handling ends, see handle).
func (c *handlerCall) detach() bool {
	p, l := c.p, c.l
	if !l.Remote {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.detached || c.state.Load() != callRunning {
		return false
	}
	own := &workerSlot{}
	own.call.Store(c)
	// In the detached slots before it leaves its worker's: Kill, Halt and
	// the watchdog always find it in one of them.
	l.addDetached(own)
	worker := c.slot
	c.slot, c.detached = own, true
	worker.call.CompareAndSwap(c, nil)
	p.wg.Add(1)
	l.workers.Add(1)
	go p.runWorker(l, worker)
	return true
}

// detachedCalls is a listener's set of handler calls detached from its
// workers (Detach), each in a slot of its own.
type detachedCalls struct {
	mu    sync.Mutex
	slots map[*workerSlot]struct{}
}

// addDetached records the slot of a detached call.
func (l *listener) addDetached(s *workerSlot) {
	l.detached.mu.Lock()
	if l.detached.slots == nil {
		l.detached.slots = map[*workerSlot]struct{}{}
	}
	l.detached.slots[s] = struct{}{}
	l.detached.mu.Unlock()
}

// removeDetached forgets the slot of a detached call that ended.
func (l *listener) removeDetached(s *workerSlot) {
	l.detached.mu.Lock()
	delete(l.detached.slots, s)
	l.detached.mu.Unlock()
}

// runningCalls appends to out l's running handler calls — its workers' and
// those detached from them — each once: a call moving to a detached slot
// (detach) is briefly in both.
func (l *listener) runningCalls(out []*handlerCall) []*handlerCall {
	start := len(out)
	for i := range l.current {
		if c := l.current[i].call.Load(); c != nil {
			out = append(out, c)
		}
	}
	l.detached.mu.Lock()
	defer l.detached.mu.Unlock()
	if len(l.detached.slots) == 0 {
		return out
	}
	seen := make(map[*handlerCall]bool, len(out)-start)
	for _, c := range out[start:] {
		seen[c] = true
	}
	for s := range l.detached.slots {
		if c := s.call.Load(); c != nil && !seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// detachedDone releases the WaitGroup counts a detached handling's
// goroutine holds (its worker's, whose place a new worker took): its
// handling ended, and the goroutine stops.
func (p *Pump) detachedDone(l *listener) {
	l.workers.Done()
	p.wg.Done()
}
