package pump_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestAddListenerWhileRunning: a listener added to a running pump is
// reachable at once; the registration rules still apply.
func TestAddListenerWhileRunning(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "pings", pr))
	if err := p.AddListener(sink[Pong](t, "pongs", pr)); err != nil {
		t.Fatal(err)
	}
	mustSend(t, p, client, "pongs", &Pong{Text: "hi"}, nil)
	if c := pr.next(t); c.Listener != "pongs" {
		t.Fatalf("handled by %s", c.Listener)
	}
	found := false
	for _, l := range p.Listeners() {
		found = found || l.Name == "pongs"
	}
	if !found {
		t.Fatal("Listeners does not show the added listener")
	}
	tests := []struct {
		name string
		l    pump.Listener
		want error
	}{
		{"duplicate name", sink[Job](t, "PINGS", pr), pump.ErrDuplicateName},
		{"tag taken", sink[Ping](t, "pings2", pr), pump.ErrTagCollision},
		{"system name", sink[Job](t, "system.job", pr), pump.ErrReservedName},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.AddListener(tc.l); !errors.Is(err, tc.want) {
				t.Fatalf("AddListener = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestRemoveListenerWaitsForHandlers: removal stops routing at once, lets
// the queued messages be handled and returns only once the running
// handlers finished.
func TestRemoveListenerWaitsForHandlers(t *testing.T) {
	g := newGate()
	running := make(chan string, 4)
	slow := listenerOf(t, "slow", func(ctx context.Context, s *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- s.Text
		g.wait(ctx)
		return nil, nil
	})
	slow.Workers = 1
	p := startPump(t, pump.Options{}, slow)
	mustSend(t, p, client, "slow", &Slow{Text: "first"}, nil)
	mustSend(t, p, client, "slow", &Slow{Text: "queued"}, nil)
	if got := <-running; got != "first" {
		t.Fatalf("running %q", got)
	}
	removed := make(chan error, 1)
	go func() { removed <- p.RemoveListener(waitCtx(t), "slow") }()
	// Routing stops before the handlers finish. (No send before that: it
	// would queue behind the blocked handler and could wait for room.)
	ctx := waitCtx(t)
	for {
		if _, ok := p.Lookup("slow"); !ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener was never taken out of the table")
		default:
			runtime.Gosched()
		}
	}
	if _, err := p.Send(ctx, client, "slow", &Slow{Text: "late"}, nil); !errors.Is(err, xmlpipe.ErrNoRoute) {
		t.Fatalf("Send after removal: %v, want ErrNoRoute", err)
	}
	select {
	case err := <-removed:
		t.Fatalf("RemoveListener returned (%v) while a handler was running", err)
	default:
	}
	g.open()
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	for len(running) > 0 {
		<-running
	}
	if err := p.RemoveListener(waitCtx(t), "slow"); !errors.Is(err, pump.ErrUnknownListener) {
		t.Fatalf("second removal: %v", err)
	}
	if err := p.RemoveListener(waitCtx(t), "system"); !errors.Is(err, pump.ErrUnknownListener) {
		t.Fatalf("unknown: %v", err)
	}
}

// TestRemoveListenerBoundedByContext: a handler that does not finish in
// time makes RemoveListener return ctx's error; the listener is gone.
func TestRemoveListenerBoundedByContext(t *testing.T) {
	g := newGate()
	running := make(chan struct{}, 1)
	p := startPump(t, pump.Options{}, listenerOf(t, "slow", func(ctx context.Context, _ *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- struct{}{}
		g.wait(ctx)
		return nil, nil
	}))
	mustSend(t, p, client, "slow", &Slow{Text: "x"}, nil)
	<-running
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.RemoveListener(ctx, "slow"); !errors.Is(err, context.Canceled) {
		t.Fatalf("RemoveListener = %v, want context.Canceled", err)
	}
	if _, ok := p.Lookup("slow"); ok {
		t.Fatal("the listener is still registered")
	}
	g.open()
}

// TestRemoveSystemListenerRefused: the organism's own listeners stay.
func TestRemoveSystemListenerRefused(t *testing.T) {
	pr := newProbe()
	p := newPump(t, pump.Options{})
	if err := p.RegisterSystem(sink[Ping](t, "system.ping", pr)); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	if err := p.RemoveListener(waitCtx(t), "system.ping"); !errors.Is(err, pump.ErrReservedName) {
		t.Fatalf("RemoveListener = %v", err)
	}
}
