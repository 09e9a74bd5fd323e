package registry

import (
	"sync"
	"time"
)

// fakeClock is an injectable clock that only moves when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// newFakeClock returns a clock stopped at a fixed UTC instant.
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's current time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
