package federation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestCancelStopsTheCallOnThePeer: a user's cancel of the answer in flight
// (the console's /cancel, pump.Cancel) stops a call that left for the
// peer: its handling never runs again (the pump drops its message), so
// the call is cancelled on the peer, whose conversation for it is killed.
// It was held open as for a halt, for a next handling that never comes:
// the peer ran the call for nobody, and its answer stayed parked.
func TestCancelStopsTheCallOnThePeer(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	holding := true
	defer func() {
		if holding {
			close(hold)
		}
	}()
	c := newCalleeHolding(t, aKey, hold)
	entered := make(chan string, 1)
	c.mu.Lock()
	c.entered = entered
	c.mu.Unlock()
	events := make(chan pump.Event, 64)
	defer c.pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			events <- e
		}
	}))()
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	md := callMetadata()
	if _, _, _, err := a.pump.Threads().JoinAs(md.ThreadID, md.From, "echo", ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(ctx, a.once, md)
		done <- err
	}()
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the call never reached the peer")
	}
	cancel(pump.ErrCancelled)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled call: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled call still waits")
	}
	g := a.m.gateways[0]
	waitUntil(t, "the peer never acknowledged the cancel", func() bool { return g.queued() == 0 })
	close(hold)
	holding = false
	select {
	case e := <-events:
		if e.Error != pump.KilledReason {
			t.Fatalf("the cancelled call's conversation on the peer completed with %q, want it killed (%q)",
				e.Error, pump.KilledReason)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled call's conversation on the peer never completed")
	}
	g.mu.Lock()
	parked := len(g.parked)
	g.mu.Unlock()
	if parked != 0 {
		t.Errorf("%d calls kept for a next handling of a cancelled message, which never comes", parked)
	}
}
