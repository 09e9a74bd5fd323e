package store

import "context"

// Statements returns how many SQL statements the writer has executed so far
// (journal inserts, delivery marks, kernel-state writes, queries inside
// write transactions, BEGIN and COMMIT). Divided by the number of journaled
// envelopes it gives the store's statements per envelope.
func (s *Store) Statements() int64 { return s.counters.statements.Load() }

// Backlog describes how far the writer has fallen behind its callers.
type Backlog struct {
	// Peak is the largest number of operations waiting in the queue when
	// the writer started a batch.
	Peak int64
	// Capacity is the queue's size (Options.QueueSize).
	Capacity int
	// Blocked counts asynchronous writes (appends, kernel-state writes,
	// and delivery marks when their buffer is full: marks.go) that found
	// the queue full and waited for room: the backpressure the writer put
	// on its callers.
	Blocked int64
}

// Backlog returns the writer's queue statistics.
func (s *Store) Backlog() Backlog {
	return Backlog{Peak: s.counters.queuePeak.Load(), Capacity: cap(s.queue), Blocked: s.counters.queueFull.Load()}
}

// enqueueAsync enqueues an asynchronous write, counting it in
// Backlog.Blocked when it has to wait for room in the queue.
func (s *Store) enqueueAsync(o *op) error {
	if len(s.queue) == cap(s.queue) {
		s.counters.queueFull.Add(1)
	}
	return s.enqueue(context.Background(), o)
}
