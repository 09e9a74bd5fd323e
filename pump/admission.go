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
	// kind is what refused it, for the refusal metric (see Refusals).
	kind refusalKind
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

// busy builds the BusyError of reason, of kind, with the pump's retry hint.
func (p *Pump) busy(kind refusalKind, reason string, err error) *BusyError {
	retry := max(p.opts.AdmitWait, time.Second).Round(time.Second)
	return &BusyError{Reason: reason, RetryAfter: retry, Err: err, kind: kind}
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
// message of user; if not, which share is full (kindBudget or
// kindUserShare) and the refusal's reason (p.flightMu held).
func (p *Pump) roomLocked(user string) (ok bool, kind refusalKind, reason string) {
	if p.inflight-p.excess >= p.opts.MaxInFlight {
		return false, kindBudget, "in-flight budget full"
	}
	if user != "" && p.users[user] >= p.userShare {
		return false, kindUserShare, "user's in-flight share full"
	}
	return true, 0, ""
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
	if ok, _, _ := p.roomLocked(user); ok {
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
	ok, kind, reason := p.roomLocked(user)
	if ok {
		kind, reason = kindBudget, "in-flight budget full"
	}
	return p.waitError(err, kind, reason)
}

// errWaitOver is park's report that its deadline passed before ctx ended.
var errWaitOver = errors.New("wait over")

// waitError turns the end of a wait for room into Inject's error: a
// *BusyError (of kind) when the wait's bound or ctx's deadline ended it.
func (p *Pump) waitError(err error, kind refusalKind, reason string) error {
	switch {
	case errors.Is(err, errWaitOver):
		return p.busy(kind, reason, nil)
	case errors.Is(err, context.DeadlineExceeded):
		return p.busy(kind, reason, err)
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
// what it holds — deliveries and room held for messages on their way there
// (see roomAt) — is under listenerShare and its queue has room for it too
// (p.flightMu held).
func (p *Pump) hasRoomLocked(l *listener) bool {
	return l.load+l.rooms < p.listenerShare && l.queue.len()+l.rooms < l.QueueSize
}

// roomAt holds room for a new external message at every one of its targets
// before anything of it is kept: the room is w's (w.rooms) until its
// deliveries are queued there (holdAdmitted) or it ends (releaseWork), so
// no other sender takes it in between and a listener never holds more
// than its share of new messages. A target at its share is waited for —
// on the injector's goroutine (w.ctx set) until w.deadline at most, giving
// up its ingress slot meanwhile; on an ingress worker not at all. It
// returns the *BusyError of a target still at its share, or of one the
// message would wait at too long (see reserveRoomLocked), with that
// target, holding no room then.
func (p *Pump) roomAt(w *work, targets []*listener) (*listener, error) {
	var granted *listener // the room a wait was handed
	for {
		p.flightMu.Lock()
		l, err := p.reserveRoomLocked(w, targets, granted)
		p.flightMu.Unlock()
		if err != nil || l == nil {
			return l, err // room held at every target, or refused at once
		}
		if w.ctx == nil {
			return l, p.busy(kindShare, listenerBusy(l), nil)
		}
		<-p.ingressSlots // others read their messages while this one waits
		err = p.waitRoom(w.ctx, w.deadline, l)
		p.ingressSlots <- struct{}{}
		if err != nil {
			return l, err
		}
		granted = l
	}
}

// reserveRoomLocked holds room for w at each of targets not held yet —
// granted, when set, is room a wait was just handed at one of them — and
// returns nil once it holds room at all. It returns instead the first
// target at its share (w then holds no room: it waits there holding
// nothing else, so two senders never hold room the other waits for), or a
// *BusyError when a target is so far behind that the message would wait
// there longer than Options.MaxQueueWait, or would wait for room longer
// than maxRoomWait: refused at once (see queueWaitLocked; p.flightMu
// held).
func (p *Pump) reserveRoomLocked(w *work, targets []*listener, granted *listener) (*listener, error) {
	if granted != nil {
		w.rooms = append(w.rooms, granted)
	}
	var now time.Time
	for _, l := range targets {
		extra := 1 // the message, not yet counted anywhere at l
		if w.holdsRoom(l) {
			extra = 0 // counted in l.rooms
		}
		if err := p.overdueLocked(l, &now, extra); err != nil {
			p.dropRoomsLocked(w)
			return l, err
		}
	}
	for _, l := range targets {
		if w.holdsRoom(l) {
			continue
		}
		if !p.hasRoomLocked(l) {
			p.dropRoomsLocked(w)
			if err := p.roomFarLocked(l, 1); err != nil {
				return l, err
			}
			forgetRefusal(l) // the message waits for room: not refused at once
			return l, nil
		}
		forgetRefusal(l)
		l.rooms++
		w.rooms = append(w.rooms, l)
	}
	return nil, nil
}

// holdsRoom reports whether w holds room at l (the pump's flightMu held).
func (w *work) holdsRoom(l *listener) bool {
	for _, r := range w.rooms {
		if r == l {
			return true
		}
	}
	return false
}

// takeRoomLocked gives up w's room at l for its delivery there, reporting
// whether it held any (p.flightMu held).
func (w *work) takeRoomLocked(l *listener) bool {
	for i, r := range w.rooms {
		if r == l {
			w.rooms = append(w.rooms[:i], w.rooms[i+1:]...)
			return true
		}
	}
	return false
}

// dropRoomsLocked gives up the room w holds and hands it on to the senders
// waiting there (p.flightMu held).
func (p *Pump) dropRoomsLocked(w *work) {
	for _, l := range w.rooms {
		l.rooms--
		p.wakeRoomLocked(l)
	}
	w.rooms = w.rooms[:0]
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
// external message, and holds it (l.rooms) for the caller: nil means the
// caller holds one unit of room at l. It gives up at once with a
// *BusyError when, meanwhile, the message's expected wait at l grows
// beyond Options.MaxQueueWait. Waiters are handed room one unit each, as
// it is freed at l, in the order they came (see wakeRoomLocked): a unit
// handed to a waiter is its own, never taken by a sender that came later.
func (p *Pump) waitRoom(ctx context.Context, deadline time.Time, l *listener) error {
	p.flightMu.Lock()
	defer p.flightMu.Unlock()
	if p.hasRoomLocked(l) {
		l.rooms++
		return nil
	}
	if p.closing.Load() {
		return ErrClosed
	}
	l.pace.waiting++
	p.admitWaiting++
	defer func() { p.admitWaiting-- }()
	w := p.newWaiterLocked("")
	q := &l.pace.waiters
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
		switch {
		case w.granted: // handed room (and counted out of the waiting)
			if p.closing.Load() {
				l.rooms--
				p.wakeRoomLocked(l)
				return ErrClosed
			}
			var now time.Time
			if refused := p.overdueLocked(l, &now, 0); refused != nil {
				l.rooms--
				p.wakeRoomLocked(l) // the room goes on
				return refused
			}
			return nil
		case w.refused != nil: // counted out of the waiting then
			return w.refused
		case err != nil || p.closing.Load():
			l.pace.waiting--
			return p.waitError(p.parkedError(ctx, err), kindShare, listenerBusy(l))
		}
		// Woken with nothing handed to it: wait again, in its place.
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
// its unit, an external message's charge to its user, and the room it
// still holds at a target it was not queued at (refused, dropped, held
// for its conversation's turn).
func (p *Pump) releaseWork(w *work) {
	p.flightMu.Lock()
	for _, l := range w.rooms {
		l.rooms--
	}
	w.rooms = nil
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
	p.holdDeliveryLocked(d, false)
	p.flightMu.Unlock()
}

// holdAdmitted is holdDelivery for a delivery of w, taking the room w holds
// at d.at (see roomAt) in the same step: no other sender gets in between.
func (p *Pump) holdAdmitted(w *work, d *delivery) {
	p.flightMu.Lock()
	p.holdDeliveryLocked(d, w.rooms != nil && w.takeRoomLocked(d.at))
	p.flightMu.Unlock()
}

// holdDeliveryLocked is holdDelivery; roomHeld says the delivery takes the
// place of room held for it at d.at (p.flightMu held).
func (p *Pump) holdDeliveryLocked(d *delivery, roomHeld bool) {
	if roomHeld {
		d.at.rooms--
	}
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
