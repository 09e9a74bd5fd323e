package pump

import (
	"fmt"
	"time"
)

// paceAlpha is the weight of one new step in a listener's measured pace
// (an exponentially weighted mean over about the last eight).
const paceAlpha = 8

// pace is how fast a listener works through its backlog, measured where
// its handlings end, and who waits for room there: what admission needs to
// estimate how long a new message would wait before its handling starts
// (see Pump.queueWaitLocked). Guarded by the pump's flightMu; kept only
// while Options.MaxQueueWait bounds the wait.
type pace struct {
	// busySince is when the listener's load last went from none to one.
	busySince time.Time
	// last is when its last handling ended in the current busy period
	// (zero: none yet), and saturated whether other messages were waiting
	// to start then.
	last      time.Time
	saturated bool
	// step is the mean time between two handlings ending while messages
	// waited to start (0: never measured): with every worker busy, one
	// waiting message starts per step.
	step time.Duration
	// waiting counts the injects waiting for room at the listener, and
	// waiters queues them for it (see Pump.wakeRoomLocked).
	waiting int
	waiters waiterQueue
	// resumed is the count of the listener's queue's released holds
	// (schedQueue.resumed) when last was noted: a pause or halt released
	// since makes last and busySince say nothing of its pace.
	resumed uint64
}

// busy notes that the listener's load went from none to one at now, with
// resumed its queue's released holds.
func (pc *pace) busy(now time.Time, resumed uint64) {
	pc.busySince, pc.last, pc.saturated, pc.resumed = now, time.Time{}, false, resumed
}

// handled notes a handling ended at now, with others waiting to start or
// not (waiting) and resumed its queue's released holds: the time since the
// previous one, when messages waited all along and no pause or halt came
// between, is one step of the pace.
func (pc *pace) handled(now time.Time, waiting bool, resumed uint64) {
	if pc.resumed != resumed { // held meanwhile: not a step
		pc.last, pc.saturated, pc.resumed = now, waiting, resumed
		return
	}
	if pc.saturated && !pc.last.IsZero() {
		if d := now.Sub(pc.last); d >= 0 {
			if pc.step == 0 {
				pc.step = d
			} else {
				pc.step += (d - pc.step) / paceAlpha
			}
		}
	}
	pc.last, pc.saturated = now, waiting
}

// queueWaitLocked estimates how long a new external message at l would wait
// before its handling starts, with extra more messages counted ahead of
// the ones queued, on their way to the queue (room held for them) and
// waiting for room (1 for a message not counted in any of these, 0 for one
// that is): the messages ahead of it, one step of l's pace each
// (paced), and at least the time l has gone without finishing a handling
// while messages waited (stalled; 0 when it was paused or halted
// meanwhile). The estimate is the larger; both are zero when none waits at
// l (p.flightMu held; *now is read from the clock when needed, once).
func (p *Pump) queueWaitLocked(l *listener, now *time.Time, extra int) (paced, stalled time.Duration) {
	ahead := l.load - int(l.active.Load())
	if ahead <= 0 {
		return 0, 0
	}
	if now.IsZero() {
		*now = p.opts.Clock()
	}
	paced = time.Duration(ahead+l.rooms+l.pace.waiting+extra) * l.pace.step
	if l.pace.resumed != l.queue.resumed.Load() {
		return paced, 0 // held since the last handling ended: how long since says nothing
	}
	since := l.pace.busySince
	if l.pace.last.After(since) {
		since = l.pace.last
	}
	return paced, now.Sub(since)
}

// overdueLocked returns the *BusyError refusing a new external message at
// l at once because it would wait there longer than Options.MaxQueueWait
// before its handling starts (nil when it would not, when no bound is set,
// or while l is paused or halted: an operator holds its backlog on purpose,
// its share bounds it). Its RetryAfter is when the backlog should be short
// enough. The refusal is noted for Refusing. p.flightMu held.
func (p *Pump) overdueLocked(l *listener, now *time.Time, extra int) error {
	bound := p.opts.MaxQueueWait
	if bound <= 0 {
		return nil
	}
	paced, stalled := p.queueWaitLocked(l, now, extra)
	wait := max(paced, stalled)
	if wait <= bound || l.queue.isPaused() || l.queue.isHalted() {
		return nil
	}
	err := &BusyError{Reason: fmt.Sprintf("listener %s busy: about %s of work queued", l.Name, wait.Round(time.Second)),
		RetryAfter: retryHint(wait - bound), kind: kindQueueWait}
	p.noteRefusal(l, *now, err, paced-bound, stalled > bound)
	return err
}

// roomFarLocked returns the *BusyError refusing a new external message at
// l, which holds its share, at once because room there is not expected
// within maxRoomWait: extra more messages (see queueWaitLocked) and those
// already waiting for room each need one step of l's pace. Nil while the
// pace is unknown or no bound is set: the message waits for room as ever.
// The refusal is noted for Refusing (p.flightMu held).
func (p *Pump) roomFarLocked(l *listener, extra int) error {
	if p.opts.MaxQueueWait <= 0 || l.pace.step == 0 {
		return nil
	}
	wait := time.Duration(l.pace.waiting+extra) * l.pace.step
	if wait <= maxRoomWait || l.queue.isPaused() || l.queue.isHalted() {
		return nil
	}
	err := &BusyError{Reason: listenerBusy(l), RetryAfter: retryHint(wait), kind: kindShare}
	p.noteRefusal(l, p.opts.Clock(), err, wait-maxRoomWait, false)
	return err
}
