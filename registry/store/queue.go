package store

import "sync"

// The write queue carries pointers to ops, not op values. An op is ~420
// bytes (a journal Entry travels inside it), so a queue of values sized for
// bursts (DefaultQueueSize) held ~7 MB of heap from the start whether or not
// anything was queued; the collector counts it as live, and the binary's
// GOGC lets the heap grow to several times its live data, so it cost several
// times that in resident memory. A queued op comes from opPool and goes back
// as soon as the writer has copied it into its batch, so the pool holds about
// as many ops as are in the queue at once.
var opPool = sync.Pool{New: func() any { return new(op) }}

// queued returns a pooled copy of o to send on the queue.
func queued(o *op) *op {
	p := opPool.Get().(*op)
	*p = *o
	return p
}

// release clears a queued op's references and returns it to the pool.
func release(p *op) {
	*p = op{}
	opPool.Put(p)
}
