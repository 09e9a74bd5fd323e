package auth

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// maxLimiterKeys is the number of tracked keys above which a new key first
// prunes the keys with nothing left to remember and, when that frees
// nothing, evicts the key that would be forgotten soonest.
const maxLimiterKeys = 1 << 16

// pendingRetry is the Retry-After of an attempt refused because the key's
// budget is taken by attempts still being verified: they settle within a
// hash or two.
const pendingRetry = time.Second

// limiter counts failed logins per key (a user name and address pair, or an
// address). An attempt reserves a slot of its key's budget before it is
// verified and settles it afterwards (fail, forgive or release), so however
// many attempts run at once, at most max of them are ever verified between
// two lockouts: there is no window between checking and counting. max
// failures within window lock the key out; each consecutive lockout lasts
// twice the previous one, from lockout up to maxLockout, and the streak is
// forgotten once the key stayed out of lockout for maxLockout. It is in
// memory: a restart forgets failures, which only ever makes it more lenient.
type limiter struct {
	max                         int
	window, lockout, maxLockout time.Duration
	// maxKeys bounds the tracked keys (maxLimiterKeys; tests lower it).
	maxKeys int

	mu   sync.Mutex
	keys map[string]*failures
}

// failures is one key's budget: recent failures, attempts in flight and
// the lockout streak.
type failures struct {
	// times are the failures within the window, oldest first.
	times []time.Time
	// pending counts reserved attempts not settled yet.
	pending int
	// lockedUntil ends the current (or last) lockout.
	lockedUntil time.Time
	// streak counts consecutive lockouts (0: none remembered).
	streak int
}

// newLimiter returns a limiter with the given thresholds; maxLockout below
// lockout is taken as lockout (no backoff).
func newLimiter(maxFailures int, window, lockout, maxLockout time.Duration) *limiter {
	return &limiter{max: maxFailures, window: window, lockout: lockout, maxLockout: max(lockout, maxLockout),
		maxKeys: maxLimiterKeys, keys: make(map[string]*failures)}
}

// reserve takes one slot of key's budget at now for an attempt about to be
// verified. It refuses while the key is locked out, or while its recent
// failures and pending attempts already fill the budget, and then says how
// long to wait. Every reservation must be settled by exactly one of fail,
// forgive or release. The empty key (no address known) is never limited.
func (l *limiter) reserve(key string, now time.Time) (ok bool, wait time.Duration) {
	if key == "" {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.keys[key]
	if f == nil {
		if len(l.keys) >= l.maxKeys {
			l.makeRoomLocked(now)
		}
		f = &failures{}
		l.keys[key] = f
	}
	if now.Before(f.lockedUntil) {
		return false, f.lockedUntil.Sub(now)
	}
	f.times = recent(f.times, now.Add(-l.window))
	if len(f.times)+f.pending >= l.max {
		if f.pending > 0 || len(f.times) == 0 {
			return false, pendingRetry
		}
		return false, f.times[0].Add(l.window).Sub(now)
	}
	f.pending++
	return true, 0
}

// fail settles a reservation of key as a failure at now and reports the
// lockout it caused (0: none). A lockout lasts lockout doubled for each
// consecutive lockout before it, at most maxLockout.
func (l *limiter) fail(key string, now time.Time) (lockedFor time.Duration) {
	if key == "" {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.settleLocked(key)
	if f == nil { // evicted meanwhile: start afresh
		f = &failures{}
		l.keys[key] = f
	}
	f.times = recent(f.times, now.Add(-l.window))
	f.times = insertSorted(f.times, now)
	if len(f.times) < l.max {
		return 0
	}
	f.times = nil
	f.streak = l.streakAt(f, now) + 1
	lockedFor = l.backoff(f.streak)
	f.lockedUntil = now.Add(lockedFor)
	return lockedFor
}

// forgive settles a reservation of key as a success: its failures, lockout
// streak and all are forgotten (other attempts in flight stay reserved).
func (l *limiter) forgive(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.settleLocked(key)
	if f == nil {
		return
	}
	if f.pending == 0 {
		delete(l.keys, key)
		return
	}
	*f = failures{pending: f.pending}
}

// release settles a reservation of key without counting it (the attempt
// was never verified, or succeeded for a key that is not forgiven).
func (l *limiter) release(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.settleLocked(key); f != nil && l.idle(f, now) {
		delete(l.keys, key)
	}
}

// settleLocked ends one of key's pending attempts and returns its record
// (nil when it was evicted).
func (l *limiter) settleLocked(key string) *failures {
	f := l.keys[key]
	if f != nil && f.pending > 0 {
		f.pending--
	}
	return f
}

// backoff is the length of the streak-th consecutive lockout.
func (l *limiter) backoff(streak int) time.Duration {
	d := l.lockout
	for i := 1; i < streak && d < l.maxLockout; i++ {
		d *= 2
	}
	return min(d, l.maxLockout)
}

// streakAt is f's lockout streak at now: forgotten once f stayed out of
// lockout for maxLockout.
func (l *limiter) streakAt(f *failures, now time.Time) int {
	if f.streak > 0 && !now.Before(f.lockedUntil.Add(l.maxLockout)) {
		return 0
	}
	return f.streak
}

// idle reports whether f has nothing left to remember at now: no failure
// within the window, no attempt in flight, no lockout and no streak.
func (l *limiter) idle(f *failures, now time.Time) bool {
	f.times = recent(f.times, now.Add(-l.window))
	if l.streakAt(f, now) == 0 {
		f.streak = 0
	}
	return len(f.times) == 0 && f.pending == 0 && !now.Before(f.lockedUntil) && f.streak == 0
}

// locked reports whether key is locked out at now.
func (l *limiter) locked(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.keys[key]
	return f != nil && now.Before(f.lockedUntil)
}

// forgetPrefix forgets every key starting with prefix (a removed user's
// pairs), except the attempts still in flight.
func (l *limiter) forgetPrefix(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, f := range l.keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if f.pending == 0 {
			delete(l.keys, k)
		} else {
			*f = failures{pending: f.pending}
		}
	}
}

// prune forgets the keys with nothing left to remember and returns how
// many it forgot.
func (l *limiter) prune(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pruneLocked(now)
}

// pruneLocked is prune with l.mu held.
func (l *limiter) pruneLocked(now time.Time) int {
	n := 0
	for k, f := range l.keys {
		if l.idle(f, now) {
			delete(l.keys, k)
			n++
		}
	}
	return n
}

// makeRoomLocked (l.mu held, the map full) prunes and, when nothing was
// idle, evicts the key that would be forgotten soonest, preferring keys
// with no attempt in flight, so memory stays bounded whatever the flood.
func (l *limiter) makeRoomLocked(now time.Time) {
	if l.pruneLocked(now) > 0 {
		return
	}
	var (
		victim     string
		victimEnd  time.Time
		victimBusy bool
		found      bool
	)
	for k, f := range l.keys {
		end, busy := l.forgottenAt(f), f.pending > 0
		if !found || victimBusy && !busy || victimBusy == busy && end.Before(victimEnd) {
			victim, victimEnd, victimBusy, found = k, end, busy, true
		}
	}
	if found {
		delete(l.keys, victim)
	}
}

// forgottenAt is when f would have nothing left to remember, its pending
// attempts aside.
func (l *limiter) forgottenAt(f *failures) time.Time {
	end := f.lockedUntil
	if f.streak > 0 {
		end = end.Add(l.maxLockout)
	}
	if n := len(f.times); n > 0 && f.times[n-1].Add(l.window).After(end) {
		end = f.times[n-1].Add(l.window)
	}
	return end
}

// size is the number of tracked keys.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// insertSorted adds t to the sorted slice ts (concurrent attempts may
// settle slightly out of order).
func insertSorted(ts []time.Time, t time.Time) []time.Time {
	i := len(ts)
	for i > 0 && ts[i-1].After(t) {
		i--
	}
	return slices.Insert(ts, i, t)
}

// recent drops the times at or before cutoff from the sorted slice ts.
func recent(ts []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cutoff) {
		i++
	}
	return ts[i:]
}
