package llm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// bucket is a backend's token bucket: capacity tokens, refilled at capacity
// per minute. A request larger than the bucket fails at once (waiting could
// never help — fixes Q16); a smaller one waits for the refill, bounded by its
// context.
type bucket struct {
	mu       sync.Mutex
	capacity float64
	tokens   float64
	last     time.Time
	now      func() time.Time
}

func newBucket(tpm int, now func() time.Time) *bucket {
	return &bucket{capacity: float64(tpm), tokens: float64(tpm), last: now(), now: now}
}

// refill adds the tokens earned since the last call; b.mu is held.
func (b *bucket) refill() {
	t := b.now()
	if el := t.Sub(b.last); el > 0 {
		b.tokens = min(b.capacity, b.tokens+el.Minutes()*b.capacity)
	}
	b.last = t
}

// acquire takes n tokens, waiting for the refill when needed.
func (b *bucket) acquire(ctx context.Context, n int) error {
	if float64(n) > b.capacity {
		return fmt.Errorf("%w: the request needs about %d tokens, rate_limit_tpm is %.0f", ErrTooLarge, n, b.capacity)
	}
	for {
		b.mu.Lock()
		b.refill()
		if b.tokens >= float64(n) {
			b.tokens -= float64(n)
			b.mu.Unlock()
			return nil
		}
		wait := time.Duration((float64(n) - b.tokens) / b.capacity * float64(time.Minute))
		b.mu.Unlock()
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the token bucket: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// settle corrects the estimate with the real usage: extra tokens are taken
// (the bucket may go into debt, which delays later requests), unused ones
// returned. It never waits.
func (b *bucket) settle(delta int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.tokens = min(b.capacity, b.tokens-float64(delta))
}
