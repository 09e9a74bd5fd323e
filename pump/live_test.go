package pump_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
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
	if _, err := p.Send(ctx, client, "slow", &Slow{Text: "late"}, nil); !errors.Is(err, failure.ErrNoRoute) {
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

// TestHotReloadPinsRoutingTable: a conversation routes within the table it
// started with (seed 000 §8.5). v1 is replaced by v2 for <Pong> while
// conversation A is in flight: a new conversation reaches v2 at once, A's
// <Pong> still reaches v1, which keeps serving it after its removal, and
// RemoveListener returns only once A is done with v1.
func TestHotReloadPinsRoutingTable(t *testing.T) {
	pr := newProbe()
	g := newGate()
	running := make(chan string, 4)
	relay := listenerOf(t, "relay", func(ctx context.Context, s *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- s.Text
		g.wait(ctx)
		return xmlpipe.Raw([]byte("<Pong><Text>" + s.Text + "</Text></Pong>")), nil // routed by tag
	})
	p := startPump(t, pump.Options{}, relay, sink[Pong](t, "v1", pr))
	t.Cleanup(g.open) // before the drain, also when the test fails

	mustSend(t, p, client, "relay", &Slow{Text: "A"}, nil)
	if got := <-running; got != "A" {
		t.Fatalf("running %q", got)
	}
	removed := make(chan error, 1)
	go func() { removed <- p.RemoveListener(waitCtx(t), "v1") }()
	waitGone(t, p, "v1")
	if err := p.AddListener(sink[Pong](t, "v2", pr)); err != nil {
		t.Fatal(err)
	}

	// New conversations use the new table: B by its tag, C through relay.
	if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<Pong xmlns=""><Text>B</Text></Pong>`), nil); err != nil {
		t.Fatal(err)
	}
	if c := pr.next(t); c.Listener != "v2" || c.Payload.(*Pong).Text != "B" {
		t.Fatalf("new conversation B handled by %s with %+v, want v2", c.Listener, c.Payload)
	}
	mustSend(t, p, client, "relay", &Slow{Text: "C"}, nil)
	if got := <-running; got != "C" {
		t.Fatalf("running %q", got)
	}
	select {
	case err := <-removed:
		t.Fatalf("RemoveListener returned (%v) while conversation A could still reach v1", err)
	default:
	}

	g.open()
	got := map[string]string{}
	for range 2 {
		c := pr.next(t)
		got[c.Payload.(*Pong).Text] = c.Listener
	}
	if diff := cmp.Diff(map[string]string{"A": "v1", "C": "v2"}, got); diff != "" {
		t.Fatalf("<Pong> of each conversation handled by (-want +got):\n%s", diff)
	}
	if err := <-removed; err != nil {
		t.Fatalf("RemoveListener: %v", err)
	}
	if _, ok := p.Lookup("v1"); ok {
		t.Fatal("v1 is registered again")
	}
}

// TestRemoveListenerKeepsServingPinnedConversation: a conversation that
// started before a removal reaches the removed listener by name; one that
// starts after gets the routing error.
func TestRemoveListenerKeepsServingPinnedConversation(t *testing.T) {
	rec := newRecorder()
	p, pr, g := pinnedRelay(t, rec)
	removed := make(chan error, 1)
	go func() { removed <- p.RemoveListener(waitCtx(t), "target") }()
	waitGone(t, p, "target")
	if _, err := p.Send(waitCtx(t), client, "target", &Pong{Text: "late"}, nil); !errors.Is(err, failure.ErrNoRoute) {
		t.Fatalf("Send after removal: %v, want ErrNoRoute", err)
	}
	g.open()
	if c := pr.next(t); c.Listener != "target" || c.Payload.(*Pong).Text != "pinned" {
		t.Fatalf("handled by %s with %+v", c.Listener, c.Payload)
	}
	rec.waitFor(t, "the pinned conversation's completion", kind(pump.EventComplete))
	if n := rec.count(kind(pump.EventHuh)); n != 0 {
		t.Fatalf("%d <huh> events in the pinned conversation: %s", n, describe(rec.snapshot()))
	}
	if err := <-removed; err != nil {
		t.Fatalf("RemoveListener: %v", err)
	}
}

// TestExternalMessageJoinsPinnedTable: an external message on a thread of
// a conversation in flight routes within that conversation's table, not the
// one a reload made current — also once it is handed over, after the turn
// in flight completed (turns.go).
func TestExternalMessageJoinsPinnedTable(t *testing.T) {
	pr := newProbe()
	g := newGate()
	running := make(chan struct{}, 1)
	hold := listenerOf(t, "hold", func(ctx context.Context, _ *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- struct{}{}
		g.wait(ctx)
		return nil, nil
	})
	p := startPump(t, pump.Options{}, hold, sink[Pong](t, "v1", pr))
	t.Cleanup(g.open)
	thread := mustSend(t, p, client, "hold", &Slow{Text: "A"}, nil)
	<-running
	removed := make(chan error, 1)
	go func() { removed <- p.RemoveListener(waitCtx(t), "v1") }()
	waitGone(t, p, "v1")
	if err := p.AddListener(sink[Pong](t, "v2", pr)); err != nil {
		t.Fatal(err)
	}
	if _, err := injectErr(t, p, envelope(client, "", thread, `<Pong xmlns=""><Text>same thread</Text></Pong>`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<Pong xmlns=""><Text>new</Text></Pong>`), nil); err != nil {
		t.Fatal(err)
	}
	if c := pr.next(t); c.Listener != "v2" {
		t.Fatalf("a new conversation reached %s, want v2", c.Listener)
	}
	g.open() // the turn in flight completes: the continuation's turn begins
	if c := pr.next(t); c.Listener != "v1" {
		t.Fatalf("a message of the pinned conversation reached %s, want v1", c.Listener)
	}
	if err := <-removed; err != nil {
		t.Fatalf("RemoveListener: %v", err)
	}
}

// waitGone waits until name is no longer in p's current routing table.
func waitGone(t *testing.T, p *pump.Pump, name string) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		if _, ok := p.Lookup(name); !ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s was never taken out of the table", name)
		default:
			runtime.Gosched()
		}
	}
}
