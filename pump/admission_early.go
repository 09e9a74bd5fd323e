package pump

import (
	"time"
)

// earlyHoldMax bounds how long one refusal decided by admission answers
// for the next messages at its listener (see Pump.Refusing) before a
// message goes through the ingress stages and admission decides again.
// It is well under the one second a retry hint is rounded to: a sender
// refused early by a stale answer is told to retry no later than the one
// refused by the full decision.
const earlyHoldMax = 250 * time.Millisecond

// earlyRefusal is what admission's last at-once refusal of a new external
// message at a listener predicts for the next ones (Pump.Refusing reads it
// without a lock). Immutable once published.
type earlyRefusal struct {
	// err is the refusal, returned as it is to the messages refused early.
	err *BusyError
	// until is when, at the listener's measured pace, its backlog should
	// be short enough again (capped at earlyHoldMax from the refusal).
	// Zero: the pace alone did not refuse.
	until time.Time
	// stalled, when set, is how long the refusal holds — earlyHoldMax at
	// most — while no handling at the listener ends: it was refused for the
	// time the listener has gone without finishing one, which only grows
	// until one ends. handled is the listener's count of handlings then.
	stalled time.Time
	handled int64
}

// holds reports whether r still refuses a new message at l at now.
func (r *earlyRefusal) holds(l *listener, now time.Time) bool {
	if now.Before(r.until) {
		return true
	}
	return now.Before(r.stalled) && l.handled.Load() == r.handled
}

// Refusing reports, cheaply and without taking a lock, whether a new
// external message to the listener named target would be refused at once
// now: a *StorageRefusal (ErrCannotJournal) to every target while
// Options.Storage fails — the pump refuses the message so itself, before
// reading it, whoever asks — else as busy, the *BusyError admission gave
// the last such message there, while what it measured then still
// predicts the same answer. A transport asks before it builds or parses
// anything of a message, and answers the refusal itself: a message the
// organism will not take costs it almost nothing, so that under overload
// the CPU goes to the messages it takes.
//
// Of busy, it says nothing (nil: the message then goes through the
// ingress stages and admission decides as ever) for an unknown target, while no bound is set
// (Options.MaxQueueWait), while the listener is paused or halted, and once
// the prediction ran out. The prediction is the one admission itself
// makes (see queueWaitLocked): the messages ahead of a new one, at the
// listener's measured pace, or the time it has gone without finishing a
// handling. It stands at most until the backlog should be short enough at
// that pace, or until a handling ends, or until admission takes (or lets
// wait for room) a message there after all, and never longer than
// earlyHoldMax (250 ms): then the next message is decided in full again.
// So an early refusal is at most that stale, and only when the listener's
// pace changed meanwhile; the retry hint it carries is rounded up to
// seconds anyway. Only a refusal admission decides at once sets it — not
// one given after waiting for room (Options.AdmitWait), which early
// refusal cannot predict. Nothing else changes: the message is not
// journaled, no conversation begins, and the ownership check of a thread
// it names is the transport's to make first (CheckThread). A transport
// that answers a message busy on its word reports it with RefusedEarly
// (the refusal metric and log); a storage refusal is not a busy one, and
// the store's log and health say why.
func (p *Pump) Refusing(target string) error {
	if err := p.storageRefusal(); err != nil {
		return err
	}
	l := p.routes.Load().lookup(target)
	if l == nil {
		return nil
	}
	r := l.early.Load()
	if r == nil || p.opts.MaxQueueWait <= 0 {
		return nil
	}
	if !r.holds(l, p.opts.Clock()) {
		return nil
	}
	if l.queue.holding.Load() {
		return nil // paused or halted on purpose: admission does not refuse at once
	}
	return r.err
}

// noteRefusal publishes err, admission's at-once refusal of a new external
// message at l decided at now, for Refusing: paced is how long, at l's
// pace, until a new message would be admitted again (≤ 0: not refused by
// the pace), and stalled whether the time l has gone without finishing a
// handling refused it too (p.flightMu held).
func (p *Pump) noteRefusal(l *listener, now time.Time, err *BusyError, paced time.Duration, stalled bool) {
	r := &earlyRefusal{err: err}
	if paced > 0 {
		r.until = now.Add(min(paced, earlyHoldMax))
	}
	if stalled {
		r.stalled, r.handled = now.Add(earlyHoldMax), l.handled.Load()
	}
	if r.until.IsZero() && r.stalled.IsZero() {
		return
	}
	l.early.Store(r)
}
