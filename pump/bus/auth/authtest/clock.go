// Package authtest holds what tests of the user service and of the servers
// built on it share: a settable clock (TOTP steps, lockouts and session
// expiry happen without waiting) and the TOTP secret of a new user.
package authtest

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use: pass its Now as
// auth.Options.Clock (or store.Options.Clock).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
