package federation

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestCallerThreadEndEndsCalleeConversation: killing the caller's
// conversation while its call is open ends the conversation the callee
// began for it.
func TestCallerThreadEndEndsCalleeConversation(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	ended := make(chan struct{}, 64)
	c.pump.Threads().OnEnd(func([]string) {
		select {
		case ended <- struct{}{}:
		default: // a signal is waiting already
		}
	})
	thread, err := a.pump.Send(context.Background(), "console", "echo", a.once, pump.OutletFunc(func(pump.Event) {}))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(c.seen()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the callee")
		}
	}
	if c.pump.Threads().Len() == 0 {
		t.Fatal("the callee holds no conversation for the call")
	}
	if _, err := a.pump.Kill(thread); err != nil {
		t.Fatal(err)
	}
	for timeout := time.After(10 * time.Second); c.pump.Threads().Len() > 0; {
		select {
		case <-ended:
		case <-timeout:
			t.Fatal("the callee's conversation did not end when the caller's did")
		}
	}
}

// TestQueueLimit: while the peer cannot be reached, calls wait in the
// outbox up to queue_limit; the next one fails at once with ErrQueueFull.
func TestQueueLimit(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCallerLimited(t, aKey, c, t.TempDir(), 2)
	c.srv.Close() // the peer is gone: nothing is acknowledged
	defer a.m.Close()
	g := a.m.gateways[0]
	for i := range 2 {
		if err := g.send(&envelope{Thread: "t", Link: link{Kind: KindEnd, Ref: "t"}}, nil); err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrQueueFull) {
			t.Fatalf("error %v, want ErrQueueFull", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call beyond queue_limit waited instead of failing")
	}
	if s := a.m.Status()[0]; s.Queued != 2 {
		t.Fatalf("queued %d, want 2", s.Queued)
	}
}

// TestAnswerNotBoundedByQueueLimit: an answer to the peer's call is kept
// for the peer however full the outbox is — refused, it would be lost and
// the peer's caller would wait for it in vain — while calls stay bounded.
func TestAnswerNotBoundedByQueueLimit(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCallerLimited(t, aKey, c, t.TempDir(), 1)
	c.srv.Close() // the peer is gone: nothing is acknowledged
	defer a.m.Close()
	g := a.m.gateways[0]
	if err := g.send(&envelope{Thread: "t", Link: link{Kind: KindEnd, Ref: "t"}}, nil); err != nil {
		t.Fatal(err)
	}
	for i, kind := range []Kind{KindReply, KindHuh, KindEnd} {
		lt := fmt.Sprintf("served-%d", i)
		e := &envelope{Thread: lt, Link: link{Kind: kind, Ref: lt}}
		if kind == KindReply {
			e.Payload, e.PayloadName = []byte(`<Echo xmlns=""><Text>x</Text></Echo>`), "Echo"
		}
		if err := g.sendAnswer(e, "conv-"+lt); err != nil {
			t.Fatalf("answer %s beyond queue_limit: %v", kind, err)
		}
	}
	if q := g.queued(); q != 4 {
		t.Fatalf("%d envelopes wait for the peer, want 4", q)
	}
	if _, err := a.echo.Handle(context.Background(), a.once, callMetadata()); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a call beyond queue_limit: %v, want ErrQueueFull", err)
	}
}

// TestAbandonedCallWithdrawn: a call its caller stops waiting for (its
// call_timeout passed, or its conversation was killed) while the link was
// down all along is withdrawn from the outbox: it frees its place under
// queue_limit and, after a restart too, nothing waits to reach the peer —
// which would run it for nobody once the link is back.
func TestAbandonedCallWithdrawn(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration // the gateway's call_timeout
		want    error
	}{
		{name: "call_timeout", timeout: 20 * time.Millisecond, want: ErrTimeout},
		{name: "conversation killed", timeout: time.Hour, want: pump.ErrConversationKilled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aKey, dir := newKey(t), t.TempDir()
			c := newCallee(t, aKey)
			c.srv.Close() // the peer is down before the caller starts
			edit := func(gc *config.Gateway) { gc.QueueLimit, gc.CallTimeout = 1, config.Duration(tt.timeout) }
			a := newCallerWith(t, aKey, c, dir, edit)
			g := a.m.gateways[0]
			for i := range 2 { // with the first call still queued, the second would find the queue full
				ctx, cancel := context.WithCancelCause(context.Background())
				if tt.want == pump.ErrConversationKilled {
					go func() {
						waitUntil(t, "the call was never queued", func() bool { return g.queued() == 1 })
						cancel(pump.ErrConversationKilled)
					}()
				}
				_, err := a.echo.Handle(ctx, a.once, callMetadata())
				cancel(nil)
				if !errors.Is(err, tt.want) && !(tt.want == pump.ErrConversationKilled && errors.Is(err, context.Canceled)) {
					t.Fatalf("call %d: error %v, want %v", i, err, tt.want)
				}
				if tt.want == ErrTimeout && !strings.Contains(err.Error(), "call_timeout") {
					t.Errorf("call %d: error %q does not name the call_timeout the operator raises", i, err)
				}
				if q := g.queued(); q != 0 {
					t.Fatalf("call %d: %d envelopes wait for the peer after the caller gave up, want 0", i, q)
				}
			}
			a.stop(t)
			a2 := newCallerWith(t, aKey, c, dir, edit)
			defer a2.m.Close()
			if q := a2.m.Status()[0].Queued; q != 0 {
				t.Fatalf("after a restart %d envelopes wait for the peer, want 0", q)
			}
		})
	}
}

// TestGatewaysTrustingOneKey: two gateways of the configuration trusting
// the same key — one peer — are refused: each would take the peer's links
// from the other for ever (register-remote-gateway refuses it the same way).
func TestGatewaysTrustingOneKey(t *testing.T) {
	aKey, peer, other := newKey(t), newKey(t), newKey(t)
	p := startedPump(t, "a")
	file := writePublic(t, peer)
	tests := []struct {
		name     string
		gateways []config.Gateway
		wantErr  bool
	}{
		{name: "one file twice", wantErr: true, gateways: []config.Gateway{
			{Name: "g", RemoteURL: "wss://127.0.0.1:1", TrustedIdentity: file},
			{Name: "h", RemoteURL: "wss://localhost:1", TrustedIdentity: file}}},
		{name: "a file and the same key inline", wantErr: true, gateways: []config.Gateway{
			{Name: "g", TrustedIdentity: file},
			{Name: "h", TrustedKey: peer.Public().(ed25519.PublicKey)}}},
		{name: "two peers", gateways: []config.Gateway{
			{Name: "g", TrustedIdentity: file},
			{Name: "h", TrustedIdentity: writePublic(t, other)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Gateways: tt.gateways})
			if err == nil {
				defer m.Close()
			}
			if got := errors.Is(err, ErrGatewayExists); got != tt.wantErr {
				t.Fatalf("New: %v, want ErrGatewayExists: %v", err, tt.wantErr)
			}
		})
	}
}

// TestTrustedKeyInline: a gateway may carry the peer's key itself (as the
// OOB channel stores it) instead of naming a file; a key of the wrong size
// is refused.
func TestTrustedKeyInline(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	p := startedPump(t, "a")
	if _, err := New(Options{Organism: "a", Key: aKey, Pump: p,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedKey: []byte("short")}}}); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
	events := make(chan string, 4)
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedKey: c.key.Public().(ed25519.PublicKey)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Watch(func(event, gw, _ string) { events <- event })
	m.Start()
	select {
	case e := <-events:
		if e != "gateway-connected" {
			t.Fatalf("event %s", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no link with the inline key")
	}
}

// TestAddRemoveGateway: a gateway added while the organism runs links up;
// one that would export, or that repeats a name or a trusted key, is
// refused; a removed gateway's link goes down and it is gone.
func TestAddRemoveGateway(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	p := startedPump(t, "a")
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	events := make(chan string, 8)
	m.Watch(func(event, gw, _ string) { events <- event + " " + gw })
	m.Start()
	bKey := c.key.Public().(ed25519.PublicKey)
	gw := config.Gateway{Name: "b", RemoteURL: c.url(), TrustedKey: bKey, Import: []string{"Echo"}}
	if err := m.AddGateway(config.Gateway{Name: "x", RemoteURL: c.url(), TrustedKey: bKey, Export: []string{"Echo"}}); err == nil {
		t.Fatal("a gateway that exports was added while running")
	}
	if err := m.AddGateway(gw); err != nil {
		t.Fatal(err)
	}
	if err := m.AddGateway(gw); !errors.Is(err, ErrGatewayExists) {
		t.Fatalf("second add: %v", err)
	}
	// Another peer cannot stand for a root tag b imports already.
	other := config.Gateway{Name: "c", RemoteURL: c.url(), TrustedKey: newKey(t).Public().(ed25519.PublicKey),
		Import: []string{"Other", "Echo"}}
	if err := m.AddGateway(other); !errors.Is(err, ErrGatewayExists) || !strings.Contains(err.Error(), "imports <Echo> already") {
		t.Fatalf("a second gateway importing Echo: %v", err)
	}
	wait := func(want string) {
		t.Helper()
		select {
		case e := <-events:
			if e != want {
				t.Fatalf("event %q, want %q", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %q", want)
		}
	}
	wait("gateway-connected b")
	if err := m.RemoveGateway(context.Background(), "B"); err != nil {
		t.Fatal(err)
	}
	wait("gateway-disconnected b")
	if s := m.Status(); len(s) != 0 {
		t.Fatalf("status after removal: %+v", s)
	}
	if err := m.RemoveGateway(context.Background(), "b"); !errors.Is(err, ErrNoGateway) {
		t.Fatalf("second removal: %v", err)
	}
}

// startedPump is a started pump for organism, shut down when the test ends.
func startedPump(t *testing.T, organism string) *pump.Pump {
	t.Helper()
	p, err := pump.New(pump.Options{Organism: organism})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}
