package federation

import (
	"sync"
	"time"
)

// A call named by its message (callid.go) leaves before its record and
// outbox entry are durable, and does not need them to be: a crash before
// they commit leaves the re-delivered message to send it again under the
// same id, which the peer refuses as a copy and answers. Most such calls
// are answered within milliseconds, and then the record and the entry are
// useless: written at the next commit, each was deleted at a later one —
// four rows and, at every commit that carried them, a page of
// federation_calls, the outbox's last pages and the freelist's page 1 of
// the caller's store. Their write is therefore queued only once the call
// has been open for callRowsDelay (deferWrite): by then, a call answered
// and acknowledged has cancelled both (rowClaim) and nothing is written.
// A call still open then is written as before; a stop writes what is
// deferred before the state closes (flushDeferred), so that a call a halt
// or the stop left open stays recorded.

// callRowsDelay is how long a call named by its message is open before
// its record and outbox entry are queued for a commit.
const callRowsDelay = time.Second

// deferredWrite is a write deferWrite holds: queue queues it, unless skip
// says it has nothing left to write.
type deferredWrite struct {
	skip  func() bool
	queue func()
	timer *time.Timer
}

// deferred holds the writes deferWrite delays, until their time comes or
// the state closes.
type deferred struct {
	mu     sync.Mutex
	writes map[*deferredWrite]struct{}
	closed bool
}

// deferWrite runs queue after delay unless skip then reports that nothing
// is left to write; if the state is closing (flushDeferred ran), at once.
func (d *db) deferWrite(delay time.Duration, skip func() bool, queue func()) *deferredWrite {
	w := &deferredWrite{skip: skip, queue: queue}
	d.deferred.mu.Lock()
	if d.deferred.closed {
		d.deferred.mu.Unlock()
		queue() // refused by the closed state, which tells its done
		return w
	}
	if d.deferred.writes == nil {
		d.deferred.writes = map[*deferredWrite]struct{}{}
	}
	d.deferred.writes[w] = struct{}{}
	w.timer = time.AfterFunc(delay, func() { d.runDeferred(w) })
	d.deferred.mu.Unlock()
	return w
}

// settleDeferred forgets w (nil: none) at once when it has nothing left to
// write, rather than holding what it would write until its time: called
// as what it writes is cancelled (rowClaim).
func (d *db) settleDeferred(w *deferredWrite) {
	if w == nil || !w.skip() {
		return
	}
	d.deferred.mu.Lock()
	if _, ok := d.deferred.writes[w]; ok {
		delete(d.deferred.writes, w)
		w.timer.Stop()
	}
	d.deferred.mu.Unlock()
}

// runDeferred runs w once: whoever takes it out of the set runs it.
func (d *db) runDeferred(w *deferredWrite) {
	d.deferred.mu.Lock()
	_, mine := d.deferred.writes[w]
	delete(d.deferred.writes, w)
	d.deferred.mu.Unlock()
	if mine && !w.skip() {
		w.queue()
	}
}

// flushDeferred queues every deferred write now (those with anything left
// to write), and the ones deferred from now on at once.
func (d *db) flushDeferred() {
	d.deferred.mu.Lock()
	d.deferred.closed = true
	ws := make([]*deferredWrite, 0, len(d.deferred.writes))
	for w := range d.deferred.writes {
		w.timer.Stop()
		ws = append(ws, w)
	}
	clear(d.deferred.writes)
	d.deferred.mu.Unlock()
	for _, w := range ws {
		if !w.skip() {
			w.queue()
		}
	}
}
