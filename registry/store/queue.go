package store

import (
	"slices"
	"sync"
)

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

// markQueue carries delivery marks to the writer beside the write queue:
// a mark is a seq appended to a slice under a mutex, and only the mark that
// finds the slice empty sends an op (opMarks) on the queue, so the pump
// pays one channel send per group commit for its marks instead of one per
// delivered envelope (a send and a pooled op copy, ~0.5-1 µs each on the
// pump's goroutines). The writer takes every queued mark at each
// transaction (take).
type markQueue struct {
	mu   sync.Mutex
	seqs []int64
}

// add queues seq and reports whether the queue was empty (the caller then
// sends an opMarks).
func (q *markQueue) add(seq int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seqs = append(q.seqs, seq)
	return len(q.seqs) == 1
}

// take appends the queued marks to into, empties the queue and returns into.
func (q *markQueue) take(into []int64) []int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	into = append(into, q.seqs...)
	q.seqs = slices.Delete(q.seqs, 0, len(q.seqs))
	return into
}
