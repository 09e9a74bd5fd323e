package federation

import (
	"context"
	"sync"
	"testing"
	"time"
)

// linkOf is gateway g's current link (nil: none).
func linkOf(g *gateway) *conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn
}

// TestStoppingTogetherNeedNotWaitForAcks: two federated organisms that
// stop at the same time, each with an envelope on the link the other,
// draining, no longer takes, do not each wait the whole drain bound for an
// acknowledgement that cannot come: a side that drains tells its peer so
// (goodbye), and the peer stops waiting. The drain bound is raised far
// beyond the test's deadline, so a wait for it fails the test.
func TestStoppingTogetherNeedNotWaitForAcks(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	released := false
	defer func() {
		if !released {
			close(hold)
		}
	}()
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	for _, m := range []*Manager{a.m, c.m} {
		m.drainLimit = 10 * time.Minute
	}

	// A first call reaches the callee, whose echo holds it.
	first := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		first <- err
	}()
	waitUntil(t, "the first call never reached the callee", func() bool { return len(c.seen()) > 0 })
	ag, cg := a.m.gateways[0], c.m.gateways[0]
	al, cl := linkOf(ag), linkOf(cg)
	if al == nil || cl == nil {
		t.Fatal("no link on both sides")
	}
	waitUntil(t, "the first call was never acknowledged", func() bool { return !ag.unacked(al, false) })

	// Both sides begin to stop: neither takes the other's envelopes any
	// more. Then each writes one: a second call, and the first's reply.
	for _, l := range []*conn{al, cl} {
		l.acks.mu.Lock()
		l.acks.draining = true
		l.acks.mu.Unlock()
	}
	go func() { _, _ = a.echo.Handle(context.Background(), a.once, callMetadata()) }()
	waitUntil(t, "the second call was never written", func() bool { return ag.unacked(al, false) })
	released = true
	close(hold)
	waitUntil(t, "the reply was never written", func() bool { return cg.unacked(cl, false) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a failed wait ends the drains before the cleanups stop
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var wg sync.WaitGroup
		wg.Go(func() { a.m.StopContext(ctx) })
		wg.Go(func() { c.m.StopContext(ctx) })
		wg.Wait()
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("two organisms stopping together each waited for the other's acknowledgements")
	}
}
