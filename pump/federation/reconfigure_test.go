package federation

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestChangedAddressRelinksKeepingCalls: a reload that changes only where
// a gateway's peer is (remote_url) relinks the gateway in place: a call
// made while the old address reached nobody waits in the outbox, and is
// delivered and answered over the new link — its caller never sees the
// gateway go away.
func TestChangedAddressRelinksKeepingCalls(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "wss://" + closed.Addr().String()
	_ = closed.Close()
	aKey := newKey(t)
	c := newCallee(t, aKey)
	var gc config.Gateway
	a := newCallerWith(t, aKey, c, t.TempDir(), func(g *config.Gateway) { g.RemoteURL = nobody; gc = *g })
	defer a.m.Close()
	answered := make(chan error, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		if err == nil {
			err = answerIs(r, "ONCE")
		}
		answered <- err
	}()
	waitUntil(t, "the call never waited in the outbox", func() bool { return a.m.Status()[0].Queued > 0 })

	gc.RemoteURL = c.url()
	ch, err := a.m.PlanGateways([]config.Gateway{gc}, func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) })
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"b"}, ch.Changed); d != "" {
		t.Errorf("changed (-want +got):\n%s", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the call across the relinked gateway: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the call was never answered; status %+v", a.m.Status())
	}
	if s := a.m.Status()[0]; s.RemoteURL != c.url() || s.State != LinkUp {
		t.Errorf("status after the relink: %+v", s)
	}
}

// answerIs checks that r is an echo answer saying want.
func answerIs(r xmlpipe.Response, want string) error {
	rr, ok := r.(*xmlpipe.RespondResponse)
	if !ok {
		return fmt.Errorf("response %T, want an answer", r)
	}
	if text, _ := stage.PayloadText(rr.Payload); text != want {
		return fmt.Errorf("answer %#v, want %q", rr.Payload, want)
	}
	return nil
}

// TestCalleeRestartedGatewayStillAnswers: a reload on the callee that
// changes the gateway its peer's calls came through (here a changed
// description, applied in place since; a restart hands the answers over
// the same way: answerThrough) keeps serving the calls already running:
// their answers leave through the gateway as it is now, rather than into a
// stopped one's queue, where the caller waited for them until its
// call_timeout.
func TestCalleeRestartedGatewayStillAnswers(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	entered := make(chan string, 1)
	c.mu.Lock()
	c.entered = entered
	c.mu.Unlock()
	a := newCallerWith(t, aKey, c, t.TempDir(), func(*config.Gateway) {})
	defer a.m.Close()
	answered := make(chan error, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		if err == nil {
			err = answerIs(r, "ONCE")
		}
		answered <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the call never reached the callee's echo")
	}

	gc := c.m.list()[0].settings()
	gc.Description = "restarted by a reload"
	ch, err := c.m.PlanGateways([]config.Gateway{gc}, func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) })
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a"}, ch.Changed); d != "" {
		t.Errorf("changed (-want +got):\n%s", d)
	}
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	close(hold)
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the call served across the restart: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the call was never answered; callee status %+v, caller status %+v", c.m.Status(), a.m.Status())
	}
	if got := c.seen(); len(got) != 1 {
		t.Errorf("the callee ran %d calls, want 1: %q", len(got), got)
	}
}

// TestChangedLimitsKeepCalls: a reload that changes only a gateway's
// limits (queue_limit, queue_bytes, call_timeout) — as an operator raises
// queue_limit while the peer is down — applies them in place: the calls
// waiting in the outbox are kept and answered once the peer is back, not
// failed as "gateway removed" by a restart of the gateway.
func TestChangedLimitsKeepCalls(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "wss://" + closed.Addr().String()
	_ = closed.Close()
	aKey := newKey(t)
	c := newCallee(t, aKey)
	var gc config.Gateway
	a := newCallerWith(t, aKey, c, t.TempDir(), func(g *config.Gateway) { g.RemoteURL = nobody; g.QueueLimit = 1; gc = *g })
	defer a.m.Close()
	answered := make(chan error, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		if err == nil {
			err = answerIs(r, "ONCE")
		}
		answered <- err
	}()
	waitUntil(t, "the call never waited in the outbox", func() bool { return a.m.Status()[0].Queued > 0 })
	where := func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	gc.QueueLimit, gc.QueueBytes, gc.CallTimeout = 5, 1<<20, config.Duration(10*time.Minute)
	ch, err := a.m.PlanGateways([]config.Gateway{gc}, where)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"b"}, ch.Changed); d != "" {
		t.Errorf("changed (-want +got):\n%s", d)
	}
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	// The raised queue_limit holds a second call that the first limit refused.
	second := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		second <- err
	}()
	waitUntil(t, "the second call never waited in the outbox", func() bool { return a.m.Status()[0].Queued > 1 })
	if s := a.m.Status()[0]; s.Waiting != 2 {
		t.Errorf("waiting after the change of limits: %d, want 2", s.Waiting)
	}

	gc.RemoteURL = c.url()
	if ch, err = a.m.PlanGateways([]config.Gateway{gc}, where); err != nil {
		t.Fatal(err)
	}
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	for i, ch := range []chan error{answered, second} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("call %d across the changed limits: %v", i, err)
			}
		case <-ctx.Done():
			t.Fatalf("call %d was never answered; status %+v", i, a.m.Status())
		}
	}
}
