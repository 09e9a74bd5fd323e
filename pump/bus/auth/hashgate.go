package auth

import (
	"context"
	"fmt"
)

// hashGate bounds the argon2id computations running at once (each holds
// Argon2.MemoryKiB of memory) and the logins waiting for one: a login that
// finds every slot taken and the queue full is refused at once instead of
// piling up.
type hashGate struct {
	// slots holds a token per running computation.
	slots chan struct{}
	// queue holds a token per login waiting for a slot.
	queue chan struct{}
	// onHash, when set (tests), runs inside every slot before the work.
	onHash func()
}

// newHashGate returns a gate of running slots and queued waiters.
func newHashGate(running, queued int) *hashGate {
	return &hashGate{slots: make(chan struct{}, running), queue: make(chan struct{}, queued)}
}

// try runs fn in a slot, waiting in the bounded queue for one. It fails
// with ErrBusy when the queue is full, or with ctx's error when ctx ends
// first; fn has not run then.
func (g *hashGate) try(ctx context.Context, fn func()) error {
	select {
	case g.slots <- struct{}{}:
	default:
		select {
		case g.queue <- struct{}{}:
		default:
			return ErrBusy
		}
		err := g.acquire(ctx)
		<-g.queue
		if err != nil {
			return err
		}
	}
	g.run(fn)
	return nil
}

// wait runs fn in a slot, waiting for one however many are waiting (user
// management by an operator, never a login). It fails with ctx's error when
// ctx ends first; fn has not run then.
func (g *hashGate) wait(ctx context.Context, fn func()) error {
	if err := g.acquire(ctx); err != nil {
		return err
	}
	g.run(fn)
	return nil
}

// acquire takes a slot or fails when ctx ends.
func (g *hashGate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("auth: waiting to hash: %w", ctx.Err())
	}
}

// run runs fn in the slot it holds and frees the slot.
func (g *hashGate) run(fn func()) {
	defer func() { <-g.slots }()
	if g.onHash != nil {
		g.onHash()
	}
	fn()
}
