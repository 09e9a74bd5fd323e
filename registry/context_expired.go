package registry

import "time"

// A conversation continued after Collect removed its history for the TTL
// would begin again with nothing, and neither the model nor the user would
// know: the agent would answer as if it had never met them. So Collect
// leaves a note of each history it removes (an expiry), and the history
// begun again under the same thread id carries it (ThreadContext.Expired):
// its reader can tell the model and the user that the earlier history is
// gone. The notes are bounded (MaxThreads, oldest first) and live in memory
// only: after a restart a history collected before it is not known to have
// been.

// Expiry says that a thread's earlier history was removed for the TTL.
type Expiry struct {
	// LastActive is when the removed history was last appended to.
	LastActive time.Time
	// Collected is when Collect removed it.
	Collected time.Time
	// TTL is the idle time after which it was removed.
	TTL time.Duration
}

// expiries are the notes of histories Collect removed whose thread has not
// begun a history again, bounded FIFO. Guarded by ContextBuffer.mu.
type expiries struct {
	m     map[string]Expiry
	order []string // oldest first; ids no longer in m are skipped
}

// add notes id's expiry, dropping the oldest notes beyond limit.
func (e *expiries) add(id string, x Expiry, limit int) {
	if e.m == nil {
		e.m = map[string]Expiry{}
	}
	e.m[id] = x
	e.order = append(e.order, id)
	for len(e.m) > limit && len(e.order) > 0 {
		delete(e.m, e.order[0])
		e.order = e.order[1:]
	}
	if len(e.order) > 2*limit+16 { // ids taken by take: compact
		live := make([]string, 0, len(e.m))
		for _, id := range e.order {
			if _, ok := e.m[id]; ok {
				live = append(live, id)
			}
		}
		e.order = live
	}
}

// take removes and returns id's note.
func (e *expiries) take(id string) (Expiry, bool) {
	x, ok := e.m[id]
	if ok {
		delete(e.m, id)
	}
	return x, ok
}

// Expired reports whether the thread's history was begun again after
// Collect had removed an earlier one for the TTL, and when.
func (c *ThreadContext) Expired() (Expiry, bool) {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	if c.expiry == nil {
		return Expiry{}, false
	}
	return *c.expiry, true
}

// ExpiredEarlier reports whether thread id's history (live or not begun
// again yet) follows an earlier one Collect removed for the TTL.
func (b *ContextBuffer) ExpiredEarlier(id string) (Expiry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if c := b.threads[id]; c != nil {
		if c.expiry == nil {
			return Expiry{}, false
		}
		return *c.expiry, true
	}
	x, ok := b.expired.m[id]
	return x, ok
}
