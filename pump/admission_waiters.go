package pump

import (
	"context"
	"time"
)

// admitWaiter is one sender waiting for room: in the whole budget (admit)
// or at its target listener's share (waitRoom). A release wakes only the
// waiters the freed room could take, in the order they came, instead of
// every waiter re-checking on a shared sync.Cond. Guarded by the pump's
// flightMu, except ready.
type admitWaiter struct {
	prev, next *admitWaiter
	// queued marks it in its waiterQueue.
	queued bool
	// ticket is its place in arrival order (lower: earlier).
	ticket uint64
	// ready is signalled once it is woken (buffered: the waker never
	// blocks).
	ready chan struct{}
	// user is a budget waiter's admission account; granted, that the
	// waker took its unit of the budget (or of room at its listener) for
	// it.
	user    string
	granted bool
	// refused is the refusal its listener's pace gave a listener waiter
	// while it waited.
	refused error
}

// waiterQueue is a FIFO of admission waiters, in ticket order.
type waiterQueue struct {
	head, tail *admitWaiter
	// n counts the waiters queued.
	n int
}

// push queues w in ticket order: behind the waiters that came before it
// (at the tail, unless w came back after a wake that handed it nothing).
func (q *waiterQueue) push(w *admitWaiter) {
	at := q.tail
	for at != nil && at.ticket > w.ticket {
		at = at.prev
	}
	w.prev = at
	if at == nil {
		w.next, q.head = q.head, w
	} else {
		w.next, at.next = at.next, w
	}
	if w.next == nil {
		q.tail = w
	} else {
		w.next.prev = w
	}
	w.queued = true
	q.n++
}

// remove takes w out of the queue (nothing when it is not queued).
func (q *waiterQueue) remove(w *admitWaiter) {
	if !w.queued {
		return
	}
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	q.n--
}

// newWaiterLocked returns a waiter taking the next place in arrival order
// (p.flightMu held).
func (p *Pump) newWaiterLocked(user string) *admitWaiter {
	p.waitTickets++
	return &admitWaiter{ticket: p.waitTickets, ready: make(chan struct{}, 1), user: user}
}

// wake signals w (p.flightMu held).
func (w *admitWaiter) wake() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// park waits, without p.flightMu, until w is woken (nil), ctx ends (its
// error), deadline passes (errWaitOver; zero: none) or the pump shuts
// down (ErrClosed).
func (p *Pump) park(ctx context.Context, deadline time.Time, w *admitWaiter) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	defer p.admitWakeups.Add(1)
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return errWaitOver
	case <-p.admitClosed:
		return ErrClosed
	}
}

// parkedError is the end of a wait for room that was not granted: ErrClosed
// once the pump shuts down, ctx's error once it ended, else errWaitOver
// (p.flightMu held).
func (p *Pump) parkedError(ctx context.Context, err error) error {
	switch {
	case p.closing.Load():
		return ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil:
		return errWaitOver
	}
	return err
}

// wakeBudgetLocked gives freed units of the budget to the waiters in admit,
// in the order they came: each one whose account has room is granted its
// unit and woken, until the budget is full again. A waiter whose user holds
// its share stays, without holding up the ones behind it (p.flightMu
// held).
func (p *Pump) wakeBudgetLocked() {
	if p.closing.Load() {
		return // they fail with ErrClosed
	}
	q := &p.budgetWaiters
	for w := q.head; w != nil && p.inflight-p.excess < p.opts.MaxInFlight; {
		next := w.next
		if w.user == "" || p.users[w.user] < p.userShare {
			q.remove(w)
			p.inflight++
			if w.user != "" {
				p.users[w.user]++
			}
			w.granted = true
			w.wake()
		}
		w = next
	}
}

// wakeRoomLocked hands the room l has free — under its share and in its
// queue, room already held counted (see hasRoomLocked) — to the waiters
// for room there, one unit each, in the order they came: the unit is held
// for the waiter (l.rooms), which is counted out of the waiting and woken
// (p.flightMu held).
func (p *Pump) wakeRoomLocked(l *listener) {
	q := &l.pace.waiters
	if q.n == 0 {
		delete(p.roomWaitingAt, l)
		return
	}
	if p.closing.Load() {
		return // they fail with ErrClosed
	}
	for q.head != nil && p.hasRoomLocked(l) {
		w := q.head
		q.remove(w)
		l.rooms++
		l.pace.waiting--
		w.granted = true
		w.wake()
	}
	if q.n == 0 {
		delete(p.roomWaitingAt, l)
	}
}

// refuseOverdueLocked ends the wait for room at l of the waiters that
// came last while l's pace says the last in line would wait there longer
// than Options.MaxQueueWait (see overdueLocked): what each waiter checked
// for itself when a release woke them all (p.flightMu held; *now is read
// from the clock when needed, once).
func (p *Pump) refuseOverdueLocked(l *listener, now *time.Time) {
	q := &l.pace.waiters
	for q.tail != nil {
		err := p.overdueLocked(l, now, 0)
		if err == nil {
			return
		}
		w := q.tail
		q.remove(w)
		w.refused = err
		l.pace.waiting--
		w.wake()
	}
}
