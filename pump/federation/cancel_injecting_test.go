package federation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestCancelWhileInjectingKillsTheCall: a caller that cancels its call
// while the peer is still injecting it (a peer that was frozen reads the
// call and the cancel one after the other) stops the call on the peer
// too: the cancel, which found no conversation to kill yet, kills it once
// it is in the pump, rather than being lost and the call run for nobody.
func TestCancelWhileInjectingKillsTheCall(t *testing.T) {
	aKey := newKey(t)
	// The echo holds its answer until the call is acknowledged (after
	// the injection, and the kill the cancel left it): the conversation
	// cannot complete before it either way.
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	holding := true
	defer func() {
		if holding {
			close(hold)
		}
	}()
	injecting := make(chan string, 1)
	release := make(chan struct{})
	c.m.beforeInject = func(conv string) {
		injecting <- conv
		<-release
	}
	events := make(chan pump.Event, 64)
	defer c.pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			events <- e
		}
	}))()
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(ctx, a.once, callMetadata())
		done <- err
	}()
	var conv string
	select {
	case conv = <-injecting:
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
	waitUntil(t, "the peer never acknowledged the cancel", func() bool { return g.queued() == 1 }) // the call's, held
	close(release)
	waitUntil(t, "the peer never acknowledged the call", func() bool { return g.queued() == 0 })
	close(hold)
	holding = false
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Conversation != conv && e.Thread != conv {
				continue
			}
			if e.Error != pump.KilledReason {
				t.Fatalf("the call's conversation completed with %q, want it killed (%q)", e.Error, pump.KilledReason)
			}
			return
		case <-deadline:
			t.Fatal("the call's conversation never completed")
		}
	}
}
