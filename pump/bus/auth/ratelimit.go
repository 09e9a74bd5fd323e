package auth

import (
	"sync"
	"time"
)

// maxLimiterKeys is the number of tracked keys above which a failure first
// prunes the keys with nothing left to remember.
const maxLimiterKeys = 1 << 16

// limiter counts failed logins per key (a user name or an address): max
// failures within window lock the key out for lockout. It is in memory: a
// restart forgets failures, which only ever makes it more lenient.
type limiter struct {
	max             int
	window, lockout time.Duration

	mu   sync.Mutex
	keys map[string]*failures
}

// failures is one key's recent failures and lockout.
type failures struct {
	times       []time.Time
	lockedUntil time.Time
}

// newLimiter returns a limiter with the given thresholds.
func newLimiter(max int, window, lockout time.Duration) *limiter {
	return &limiter{max: max, window: window, lockout: lockout, keys: make(map[string]*failures)}
}

// locked reports whether key is locked out at now. The empty key (no address
// known) is never limited.
func (l *limiter) locked(key string, now time.Time) bool {
	if key == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.keys[key]
	return f != nil && now.Before(f.lockedUntil)
}

// fail records a failure of key at now and reports whether it locked the key
// out.
func (l *limiter) fail(key string, now time.Time) bool {
	if key == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.keys[key]
	if f == nil {
		if len(l.keys) >= maxLimiterKeys {
			l.pruneLocked(now)
		}
		f = &failures{}
		l.keys[key] = f
	}
	f.times = recent(f.times, now.Add(-l.window))
	f.times = append(f.times, now)
	if len(f.times) < l.max {
		return false
	}
	f.times = nil
	f.lockedUntil = now.Add(l.lockout)
	return true
}

// reset forgets key's failures and lockout.
func (l *limiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}

// prune forgets keys whose failures are all older than the window and whose
// lockout has passed, and returns how many it forgot.
func (l *limiter) prune(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pruneLocked(now)
}

// pruneLocked is prune with l.mu held.
func (l *limiter) pruneLocked(now time.Time) int {
	n := 0
	for k, f := range l.keys {
		f.times = recent(f.times, now.Add(-l.window))
		if len(f.times) == 0 && !now.Before(f.lockedUntil) {
			delete(l.keys, k)
			n++
		}
	}
	return n
}

// size is the number of tracked keys.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// recent drops the times at or before cutoff from the sorted slice ts.
func recent(ts []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cutoff) {
		i++
	}
	return ts[i:]
}
