package pump

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBusy reports a message the organism did not take because its admission
// budget is used up (see Options.MaxInFlight): the whole budget, the target
// listener's share or the user's — or because it would wait at its target
// listener longer than Options.MaxQueueWait before its handling starts.
// Nothing of the message was kept; the sender may try again later. The
// error is a *BusyError.
var ErrBusy = errors.New("pump: busy")

// BusyError is an ErrBusy refusal: what was full and when to try again.
type BusyError struct {
	// Reason says which share of the budget is full: "in-flight budget
	// full", "listener NAME busy" (its share, or about N s of work queued
	// there: see Options.MaxQueueWait) or "user's in-flight share full".
	Reason string
	// RetryAfter is a hint of when to try again (whole seconds, at least 1).
	RetryAfter time.Duration
	// Err is the context error when the wait for room ended by the caller's
	// deadline (nil otherwise).
	Err error
}

// Error says that the organism is busy, why, and when to try again.
func (e *BusyError) Error() string {
	s := "pump: busy: " + e.Reason
	if e.RetryAfter > 0 {
		s += "; retry in " + e.RetryAfter.String()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes a BusyError match ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Unwrap returns the context error the wait ended with (nil for none).
func (e *BusyError) Unwrap() error { return e.Err }

// busy builds the BusyError of reason, with the pump's retry hint.
func (p *Pump) busy(reason string, err error) *BusyError {
	retry := max(p.opts.AdmitWait, time.Second).Round(time.Second)
	return &BusyError{Reason: reason, RetryAfter: retry, Err: err}
}

// retryHint is the RetryAfter of a refusal that expects room in d: d
// rounded up to whole seconds, at least 1 s.
func retryHint(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}

// ceilDiv is a/b rounded up, at least 1.
func ceilDiv(a, b int) int { return max((a+b-1)/b, 1) }

// userKey is the admission account of an external message's principal: its
// user, else its identity ("" without a principal: not capped per user).
func userKey(who *Principal) string {
	switch {
	case who == nil:
		return ""
	case who.User != "":
		return "user:" + who.User
	default:
		return "from:" + who.From
	}
}

// roomLocked reports whether the budget has room for one more external
// message of user (p.flightMu held).
func (p *Pump) roomLocked(user string) (ok bool, reason string) {
	if p.inflight-p.excess >= p.opts.MaxInFlight {
		return false, "in-flight budget full"
	}
	if user != "" && p.users[user] >= p.userShare {
		return false, "user's in-flight share full"
	}
	return true, ""
}

// admitDeadline is when an Inject starting now stops waiting for room
// (AdmitWait from now; now itself for a negative AdmitWait).
func (p *Pump) admitDeadline() time.Time { return time.Now().Add(max(p.opts.AdmitWait, 0)) }

// admit takes one unit of the admission budget for an external message of
// user, waiting for room until deadline: then it fails with a *BusyError
// (wrapping ctx's error when ctx's deadline came first). A zero deadline
// (Recover) waits as long as ctx allows and never gets ErrBusy. It fails
// with ErrClosed once the pump shuts down and with ctx's error when ctx is
// cancelled. Waiters get freed units in the order they came (see
// wakeBudgetLocked).
func (p *Pump) admit(ctx context.Context, deadline time.Time, user string) error {
	p.flightMu.Lock()
	defer p.flightMu.Unlock()
	if p.closing.Load() {
		return ErrClosed
	}
	if ok, _ := p.roomLocked(user); ok {
		p.inflight++
		if user != "" {
			p.users[user]++
		}
		return nil
	}
	w := p.newWaiterLocked(user)
	p.budgetWaiters.push(w)
	p.admitWaiting++
	p.flightMu.Unlock()
	err := p.park(ctx, deadline, w)
	p.flightMu.Lock()
	p.admitWaiting--
	if w.granted {
		if p.closing.Load() { // the unit back: nothing is admitted now
			p.inflight--
			p.unchargeLocked(user)
			p.signalLocked() // the drain may wait for it
			return ErrClosed
		}
		return nil
	}
	p.budgetWaiters.remove(w)
	err = p.parkedError(ctx, err)
	if deadline.IsZero() {
		return err // Recover: ctx alone bounds it
	}
	_, reason := p.roomLocked(user)
	if reason == "" {
		reason = "in-flight budget full"
	}
	return p.waitError(err, reason)
}

// errWaitOver is park's report that its deadline passed before ctx ended.
var errWaitOver = errors.New("wait over")

// waitError turns the end of a wait for room into Inject's error: a
// *BusyError when the wait's bound or ctx's deadline ended it.
func (p *Pump) waitError(err error, reason string) error {
	switch {
	case errors.Is(err, errWaitOver):
		return p.busy(reason, nil)
	case errors.Is(err, context.DeadlineExceeded):
		return p.busy(reason, err)
	}
	return err
}

// listenerBusy is the BusyError reason of a target at its share.
func listenerBusy(l *listener) string { return fmt.Sprintf("listener %s busy", l.Name) }

// maxRoomWait bounds the wait for room at a target holding its share whose
// pace is known (see waitRoom): a message that would wait longer for one of
// its handlings to finish is refused at once. Under sustained overload a
// wait for room serves no more messages — the queue is full, the listener
// busy — and only holds the sender (and, on one connection, the sender's
// next messages) for what is refused in the end.
const maxRoomWait = 250 * time.Millisecond

// hasRoomLocked reports whether l may take one more new external message:
// it holds fewer than listenerShare deliveries and its queue is not full
// (p.flightMu held).
func (p *Pump) hasRoomLocked(l *listener) bool {
	return l.load < p.listenerShare && l.queue.len() < l.QueueSize
}

// fullTarget returns the first of targets that holds its share of the
// budget (nil: none): a new external message would only wait there. It
// returns a *BusyError instead when a target is so far behind that the
// message would wait there longer than Options.MaxQueueWait, or would wait
// for room longer than maxRoomWait: refused at once (see queueWaitLocked).
func (p *Pump) fullTarget(targets []*listener) (*listener, error) {
	p.flightMu.Lock()
	defer p.flightMu.Unlock()
	var now time.Time
	for _, l := range targets {
		if err := p.overdueLocked(l, &now, 1); err != nil {
			return l, err
		}
	}
	for _, l := range targets {
		if !p.hasRoomLocked(l) {
			if err := p.roomFarLocked(l, 1); err != nil {
				return l, err
			}
			forgetRefusal(l) // the message waits for room: not refused at once
			return l, nil
		}
		forgetRefusal(l)
	}
	return nil, nil
}

// forgetRefusal drops l's early refusal (see Pump.Refusing): admission just
// did not refuse a new message there at once, so what it predicted no
// longer holds.
func forgetRefusal(l *listener) {
	if l.early.Load() != nil {
		l.early.Store(nil)
	}
}

// waitRoom waits, until deadline at most, until l has room for a new
// external message (see fullTarget). It gives up at once with a *BusyError
// when, meanwhile, the message's expected wait at l grows beyond
// Options.MaxQueueWait. Waiters are woken one per unit of room freed at l,
// in the order they came (see wakeRoomLocked).
func (p *Pump) waitRoom(ctx context.Context, deadline time.Time, l *listener) error {
	p.flightMu.Lock()
	defer p.flightMu.Unlock()
	if p.hasRoomLocked(l) {
		return nil
	}
	if p.closing.Load() {
		return ErrClosed
	}
	l.pace.waiting++
	p.admitWaiting++
	w := p.newWaiterLocked("")
	q := &l.pace.waiters
	// roomWoken: the last wake was for room there, which it must pass
	// on unless it returns to take it.
	roomWoken, roomy := false, false
	defer func() {
		if w.refused == nil { // a refused one was counted out then
			l.pace.waiting--
		}
		p.admitWaiting--
		if roomWoken && !roomy {
			p.wakeRoomLocked(l) // the room it was woken for goes on
		}
	}()
	for {
		q.push(w)
		if p.roomWaitingAt == nil {
			p.roomWaitingAt = map[*listener]struct{}{}
		}
		p.roomWaitingAt[l] = struct{}{}
		p.flightMu.Unlock()
		err := p.park(ctx, deadline, w)
		p.flightMu.Lock()
		q.remove(w)
		roomWoken = w.woken
		if w.woken {
			w.woken = false
			q.woken--
		}
		switch {
		case w.refused != nil:
			return w.refused
		case err != nil || p.closing.Load():
			return p.waitError(p.parkedError(ctx, err), listenerBusy(l))
		}
		var now time.Time
		if refused := p.overdueLocked(l, &now, 0); refused != nil {
			return refused
		}
		if p.hasRoomLocked(l) {
			roomy = true
			return nil
		}
		// Another message took the room first: wait again, in its place.
	}
}

// hold counts one more unit of internal work.
func (p *Pump) hold() {
	p.flightMu.Lock()
	p.inflight++
	p.flightMu.Unlock()
}

// release counts one unit of work finished.
func (p *Pump) release() {
	p.flightMu.Lock()
	p.inflight--
	p.signalLocked()
	p.flightMu.Unlock()
}

// releaseWork counts work w finished with the ingress stages (or dropped):
// its unit, and an external message's charge to its user.
func (p *Pump) releaseWork(w *work) {
	p.flightMu.Lock()
	p.inflight--
	p.unchargeLocked(w.user)
	p.signalLocked()
	p.flightMu.Unlock()
}

// holdDelivery counts a delivery queued at its listener d.at: one unit of
// work, one of the listener's load (beyond its share, excess), and one of
// its user's.
func (p *Pump) holdDelivery(d *delivery) {
	p.flightMu.Lock()
	p.inflight++
	if d.at.load == 0 && p.opts.MaxQueueWait > 0 {
		d.at.pace.busy(p.opts.Clock(), d.at.queue.resumed.Load())
	}
	d.at.load++
	if d.at.load > p.listenerShare {
		p.excess++
	}
	if d.user != "" {
		p.users[d.user]++
	}
	p.flightMu.Unlock()
}

// releaseDelivery counts a delivery finished (dropped or refused, or handled:
// see releaseHandled).
func (p *Pump) releaseDelivery(d *delivery) { p.releaseHandled(d, time.Time{}) }

// releaseHandled counts a delivery whose handling ended at now (zero: it
// was not handled) finished: one more step of its listener's pace.
func (p *Pump) releaseHandled(d *delivery, now time.Time) {
	p.flightMu.Lock()
	if !now.IsZero() && p.opts.MaxQueueWait > 0 {
		// Waiting: the others at the listener, not running (this one is
		// not counted active any more).
		d.at.pace.handled(now, d.at.load-1-int(d.at.active.Load()) > 0, d.at.queue.resumed.Load())
	}
	p.inflight--
	if d.at.load > p.listenerShare {
		p.excess--
	}
	d.at.load--
	p.unchargeLocked(d.user)
	p.signalLocked()
	p.flightMu.Unlock()
}

// unchargeLocked drops one unit of user's account (p.flightMu held).
func (p *Pump) unchargeLocked(user string) {
	if user == "" {
		return
	}
	if n := p.users[user] - 1; n > 0 {
		p.users[user] = n
	} else {
		delete(p.users, user)
	}
}

// signalLocked wakes, after a release, the admission waiters the freed
// room could take — in the budget and at each listener — and the drain
// once nothing is in flight (p.flightMu held).
func (p *Pump) signalLocked() {
	if p.inflight <= 0 {
		p.flight.Broadcast()
	}
	p.wakeBudgetLocked()
	var now time.Time
	for l := range p.roomWaitingAt {
		p.refuseOverdueLocked(l, &now)
		p.wakeRoomLocked(l)
	}
}
