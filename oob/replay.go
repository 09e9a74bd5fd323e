package oob

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Replay cache errors.
var (
	// errReplayed: the signature was accepted before.
	errReplayed = errors.New("signature already used")
	// errCacheFull: the cache holds its maximum of unexpired signatures.
	errCacheFull = errors.New("replay cache full")
	// errNotRecorded: the signature could not be recorded in the
	// ReplayStore, so the request is refused (it could be replayed after a
	// restart).
	errNotRecorded = errors.New("signature not recorded")
)

// persistTimeout bounds recording one signature in the ReplayStore.
const persistTimeout = 10 * time.Second

// ReplayStore keeps a ReplayCache's signatures across restarts of the
// process (*store.Store is one).
type ReplayStore interface {
	// RememberSignature durably records sig as used until expires (it may
	// forget the signatures expired at now).
	RememberSignature(ctx context.Context, sig []byte, expires, now time.Time) error
	// RememberedSignatures calls fn for each recorded signature whose
	// expiry is after now.
	RememberedSignatures(ctx context.Context, now time.Time, fn func(sig []byte, expires time.Time)) error
}

// ReplayCache remembers each accepted signature until its request's
// timestamp leaves the freshness window (after that the timestamp check
// refuses it anyway), bounded to max entries: when full of unexpired
// entries it refuses new requests rather than forget one (which would let
// it be replayed).
type ReplayCache struct {
	mu sync.Mutex
	// persist, when set, records every accepted signature (Persist).
	persist ReplayStore
	max     int
	seen    map[string]time.Time // signature bytes → when it may be forgotten
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

// Persist makes c durable: it loads the signatures rs remembers that are
// unexpired at now, and from then on records every signature add accepts
// in rs before add returns, so a request accepted before a restart of the
// process is still refused after it. A caller that replaces its store (a
// reload that reopens the data directory) calls Persist again with the new
// one.
func (c *ReplayCache) Persist(ctx context.Context, rs ReplayStore, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := rs.RememberedSignatures(ctx, now, func(sig []byte, expires time.Time) {
		if exp, ok := c.seen[string(sig)]; !ok || exp.Before(expires) {
			c.seen[string(sig)] = expires
		}
		if c.next.IsZero() || expires.Before(c.next) {
			c.next = expires
		}
	})
	if err != nil {
		return fmt.Errorf("oob: load the replay cache: %w", err)
	}
	c.persist = rs
	return nil
}

// add records sig, forgettable at expires; errReplayed when already seen,
// errNotRecorded when the ReplayStore could not record it.
func (c *ReplayCache) add(sig string, expires, now time.Time) error {
	rs, err := c.admit(sig, expires, now)
	if err != nil || rs == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := rs.RememberSignature(ctx, []byte(sig), expires, now); err != nil {
		// The signature stays in memory: refused here, it is refused
		// again until it expires.
		return fmt.Errorf("%w: %w", errNotRecorded, err)
	}
	return nil
}

// admit is add's check and in-memory record, under the lock; it returns
// the ReplayStore to record sig in (nil: none).
func (c *ReplayCache) admit(sig string, expires, now time.Time) (ReplayStore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.seen[sig]; ok && now.Before(exp) {
		return nil, errReplayed
	}
	if len(c.seen) >= c.max || (!c.next.IsZero() && !now.Before(c.next)) {
		c.sweep(now)
	}
	if len(c.seen) >= c.max {
		return nil, errCacheFull
	}
	c.seen[sig] = expires
	if c.next.IsZero() || expires.Before(c.next) {
		c.next = expires
	}
	return c.persist, nil
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
