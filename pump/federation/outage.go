package federation

import (
	"sync"
	"time"
)

// Reminder intervals of an outage's log (outage): the first reminder
// comes remindFirst after the warning of the transition, each next one
// twice as late, up to remindMax apart.
const (
	remindFirst = time.Minute
	remindMax   = time.Hour
)

// outage follows how long a dialing gateway's peer has been unreachable,
// so that its log says so once at the transition, then in reminders less
// and less often (1 min, 2 min, 4 min, … up to 1 h apart) rather than at
// every failed dial, and once more, as INFO, when the peer is back. The
// zero value is a peer not known to be down.
type outage struct {
	mu       sync.Mutex
	down     bool
	since    time.Time // when the peer became unreachable
	attempts int       // dials failed since
	queued   int       // calls made since, which waited for the peer
	next     time.Time // when the next reminder is due
	every    time.Duration
}

// outageLog is what one failed dial of an outage logs.
type outageLog int

const (
	// outageQuiet: a failed dial between reminders (logged at DEBUG).
	outageQuiet outageLog = iota
	// outageBegan: the first failed dial — the peer became unreachable.
	outageBegan
	// outageReminder: the peer is still unreachable, a reminder is due.
	outageReminder
)

// failed records a failed dial at now: since is when the link went down
// (the gateway's Status since). It says what to log, how long the peer
// has been down and how many dials failed.
func (o *outage) failed(now, since time.Time) (what outageLog, downFor time.Duration, attempts int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		if since.IsZero() || since.After(now) {
			since = now
		}
		o.down, o.since, o.attempts, o.queued = true, since, 1, 0
		o.every = remindFirst
		o.next = now.Add(o.every)
		return outageBegan, now.Sub(o.since), 1
	}
	o.attempts++
	if now.Before(o.next) {
		return outageQuiet, now.Sub(o.since), o.attempts
	}
	o.every = min(2*o.every, remindMax)
	o.next = now.Add(o.every)
	return outageReminder, now.Sub(o.since), o.attempts
}

// callQueued counts a call made while the peer is unreachable.
func (o *outage) callQueued() {
	o.mu.Lock()
	if o.down {
		o.queued++
	}
	o.mu.Unlock()
}

// ended records that a link came up at now: was says the peer had been
// unreachable, for downFor, with queued calls made meanwhile.
func (o *outage) ended(now time.Time) (was bool, downFor time.Duration, attempts, queued int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return false, 0, 0, 0
	}
	o.down = false
	return true, now.Sub(o.since), o.attempts, o.queued
}
