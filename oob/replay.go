package oob

import (
	"errors"
	"sync"
	"time"
)

// Replay cache errors.
var (
	// errReplayed: the signature was accepted before.
	errReplayed = errors.New("signature already used")
	// errCacheFull: the cache holds its maximum of unexpired signatures.
	errCacheFull = errors.New("replay cache full")
)

// ReplayCache remembers each accepted signature until its request's
// timestamp leaves the freshness window (after that the timestamp check
// refuses it anyway), bounded to max entries: when full of unexpired
// entries it refuses new requests rather than forget one (which would let
// it be replayed).
type ReplayCache struct {
	mu   sync.Mutex
	max  int
	seen map[string]time.Time // signature bytes → when it may be forgotten
	// next is the earliest expiry in seen (zero when empty): adding past it
	// (or to a full cache) sweeps every entry once.
	next time.Time
}

// NewReplayCache returns an empty cache of at most max signatures
// (DefaultReplayMax when max <= 0). A caller that restarts the server (a
// configuration reload) passes the same cache to each (Options.Replay), so
// a request accepted before the restart is still refused after it.
func NewReplayCache(max int) *ReplayCache {
	if max <= 0 {
		max = DefaultReplayMax
	}
	return &ReplayCache{max: max, seen: make(map[string]time.Time)}
}

// add records sig, forgettable at expires; errReplayed when already seen.
func (c *ReplayCache) add(sig string, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.seen[sig]; ok && now.Before(exp) {
		return errReplayed
	}
	if len(c.seen) >= c.max || (!c.next.IsZero() && !now.Before(c.next)) {
		c.sweep(now)
	}
	if len(c.seen) >= c.max {
		return errCacheFull
	}
	c.seen[sig] = expires
	if c.next.IsZero() || expires.Before(c.next) {
		c.next = expires
	}
	return nil
}

// sweep forgets the expired entries.
func (c *ReplayCache) sweep(now time.Time) {
	c.next = time.Time{}
	for k, exp := range c.seen {
		if !now.Before(exp) {
			delete(c.seen, k)
			continue
		}
		if c.next.IsZero() || exp.Before(c.next) {
			c.next = exp
		}
	}
}

// len is the number of remembered signatures.
func (c *ReplayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}
