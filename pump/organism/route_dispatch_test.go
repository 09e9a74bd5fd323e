package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Jam is the payload of a listener that always fails.
type Jam struct{ Text string }

// errOutOfInk is the jammer's failure.
var errOutOfInk = errors.New("out of ink")

// TestRouteDispatchFailureKeepsItsDetail: a routed payload the pump
// delivers but whose handler fails comes back as a *pump.AskError carrying
// the failure's event — its kind, listener and diagnostics, the handler's
// own error among them — not as the canned text alone.
func TestRouteDispatchFailureKeepsItsDetail(t *testing.T) {
	jam := Func("jammer", "Always fails", func(context.Context, *Jam, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, fmt.Errorf("jammed: %w", errOutOfInk)
	})
	o, err := New(helloConfig(t, nil), Options{Logger: fedLogger(), Listeners: []Listener{jam}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := o.RouteDispatcher("route-test").Dispatch(ctx, "jammer", []byte(`<Jam xmlns=""><Text>go</Text></Jam>`))
	if err == nil {
		t.Fatalf("a failed handling dispatched without an error: %+v", d)
	}
	if d.Thread == "" || d.Answer != nil {
		t.Errorf("dispatched %+v, want its thread and no answer", d)
	}
	var ae *pump.AskError
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %q, want a *pump.AskError", err, err)
	}
	if ae.Event.Kind != pump.EventHuh || ae.Event.Listener != "jammer" || ae.Event.Conversation != d.Thread {
		t.Errorf("event %s from listener %q of conversation %q, want a huh from jammer of %q", ae.Event.Kind,
			ae.Event.Listener, ae.Event.Conversation, d.Thread)
	}
	if !strings.Contains(err.Error(), "out of ink") {
		t.Errorf("error %q does not say why the handler failed", err)
	}
}

// Stall is the payload of a listener that waits until it is stopped.
type Stall struct{ Text string }

// TestRouteDispatchKilled: a routed conversation an operator kills before
// it answers is pump.ErrConversationKilled, not a dispatch without an
// answer and without an error.
func TestRouteDispatchKilled(t *testing.T) {
	running := make(chan string, 1)
	stall := Func("staller", "Waits", func(ctx context.Context, _ *Stall, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- md.ThreadID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	o, err := New(helloConfig(t, nil), Options{Logger: fedLogger(), Listeners: []Listener{stall}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	type result struct {
		err    error
		thread string
	}
	done := make(chan result, 1)
	go func() {
		d, err := o.RouteDispatcher("route-test").Dispatch(context.Background(), "staller",
			[]byte(`<Stall xmlns=""><Text>wait</Text></Stall>`))
		done <- result{err, d.Thread}
	}()
	var thread string
	select {
	case thread = <-running:
	case <-time.After(30 * time.Second):
		t.Fatal("the staller never ran")
	}
	if _, err := o.Pump.Kill(thread); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !errors.Is(r.err, pump.ErrConversationKilled) || r.thread != thread {
			t.Errorf("killed dispatch: thread %q, error %v; want %q and pump.ErrConversationKilled", r.thread, r.err, thread)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the dispatch did not end after the kill")
	}
}
