package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxFailedSeqs bounds how many failed appends durability remembers for
// WaitDurable; older ones are forgotten (their waiters are long gone).
const maxFailedSeqs = 4096

// durability tracks the journal's committed high-water mark for callers
// that must not answer before their entry is on disk (durable
// acknowledgements): every seq up to high is committed, or tombstoned when
// its append failed.
type durability struct {
	mu      sync.Mutex
	high    int64
	advance chan struct{} // closed and replaced each time high moves
	failed  map[int64]string
	closed  bool
	// hurry is the highest seq a waiter waits for: until high reaches it
	// the writer commits what is queued without waiting out its batch
	// delay, so an acknowledgement costs one group commit, not the delay.
	hurry atomic.Int64
	// watched is the highest seq a WaitCommitted caller waits for: it does
	// not hurry the writer, but the writer does not linger over a batch it
	// waits for (Options.BatchLinger). lingering is set while the writer
	// lingers, so that such a caller cuts the lingering short.
	watched   atomic.Int64
	lingering atomic.Bool
}

// newDurability starts tracking at high, the last seq on disk at Open.
func newDurability(high int64) *durability {
	return &durability{high: high, advance: make(chan struct{}), failed: map[int64]string{}}
}

// advanceTo records that every seq up to high is committed (writer only).
func (d *durability) advanceTo(high int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if high <= d.high {
		return
	}
	d.high = high
	close(d.advance)
	d.advance = make(chan struct{})
}

// fail records that the append of seq failed with reason (writer only,
// before the tombstone's commit advances the mark past it), and wakes the
// waiters: the waiter of seq learns of the failure at once, even when the
// tombstone cannot be committed either (a full disk), which would leave
// the mark below seq until a later commit succeeds.
func (d *durability) fail(seq int64, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.failed) >= maxFailedSeqs {
		clear(d.failed)
	}
	d.failed[seq] = reason
	if !d.closed {
		close(d.advance)
		d.advance = make(chan struct{})
	}
}

// close wakes every waiter for good (the store closed).
func (d *durability) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		close(d.advance)
	}
}

// urgent reports whether a waiter waits for a seq above committed.
func (d *durability) urgent(committed int64) bool { return d.hurry.Load() > committed }

// waited reports whether a WaitDurable or WaitCommitted caller waits for
// a seq above committed.
func (d *durability) waited(committed int64) bool {
	return d.hurry.Load() > committed || d.watched.Load() > committed
}

// want raises hurry to seq.
func (d *durability) want(seq int64) { raise(&d.hurry, seq) }

// raise raises v to seq.
func raise(v *atomic.Int64, seq int64) {
	for {
		cur := v.Load()
		if cur >= seq || v.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// Durable returns the journal's committed high-water mark: every seq up to
// it is committed (or was tombstoned because its append failed).
func (s *Store) Durable() int64 {
	s.dur.mu.Lock()
	defer s.dur.mu.Unlock()
	return s.dur.high
}

// Assigned returns the highest seq handed out by AppendSeq so far (0 for an
// empty journal). WaitDurable(Assigned()) waits for everything journaled
// before the call.
func (s *Store) Assigned() int64 { return s.assigned.Load() }

// WaitDurable returns once the journal entry seq, and every entry before
// it, is committed; it also cuts the writer's batch delay short, so the
// wait costs one group commit. It returns an ErrWriteFailed error when the
// append of seq itself failed (it was tombstoned, not committed), ErrClosed
// when the store closes first, or ctx's error.
func (s *Store) WaitDurable(ctx context.Context, seq int64) error {
	return s.waitDurable(ctx, seq, true)
}

// WaitCommitted is WaitDurable without cutting the batch delay short: seq
// commits with the next commit somebody hurries (WaitDurable, a
// synchronous write), or when the batch delay ends (the writer does not
// linger over a batch somebody waits for: Options.BatchLinger). For a waiter whose
// wait is nobody's latency (an acknowledgement that a commit soon to come
// carries anyway): it adds no commit of its own.
func (s *Store) WaitCommitted(ctx context.Context, seq int64) error {
	return s.waitDurable(ctx, seq, false)
}

func (s *Store) waitDurable(ctx context.Context, seq int64, hurry bool) error {
	d := s.dur
	for {
		d.mu.Lock()
		high, ch, closed := d.high, d.advance, d.closed
		reason, failed := d.failed[seq]
		d.mu.Unlock()
		if failed {
			return fmt.Errorf("%w: journal seq %d: %s", ErrWriteFailed, seq, reason)
		}
		if high >= seq {
			return nil
		}
		if closed {
			return ErrClosed
		}
		if hurry {
			d.want(seq)
		} else {
			raise(&d.watched, seq)
		}
		if hurry || d.lingering.Load() {
			select {
			case s.wake <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
