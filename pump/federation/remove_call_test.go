package federation

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRemoveGatewayEndsItsCalls: removing a gateway (OOB
// unregister-remote-gateway, or a re-registration of its URL) while a call
// waits on the peer fails the call at once with ErrGatewayRemoved, cancels
// it — the peer's conversation for it ends — and removes the imported
// listener within the removal's bound, instead of leaving the call to wait
// for call_timeout and the removal to run out of time.
func TestRemoveGatewayEndsItsCalls(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	ended := make(chan struct{}, 1)
	c.pump.Threads().OnEnd(func([]string) {
		select {
		case ended <- struct{}{}:
		default: // a signal is waiting already
		}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		errc <- err
	}()
	waitUntil(t, "the call never reached the callee", func() bool { return len(c.seen()) > 0 })
	if c.pump.Threads().Len() == 0 {
		t.Fatal("the callee holds no conversation for the call")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.m.RemoveGateway(ctx, "b"); err != nil {
		t.Errorf("RemoveGateway: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrGatewayRemoved) {
			t.Errorf("the call ended with %v, want ErrGatewayRemoved", err)
		}
	case <-ctx.Done():
		t.Fatal("the call still waits after its gateway was removed")
	}
	if _, ok := a.pump.Lookup("echo"); ok {
		t.Error("the imported listener outlived its gateway")
	}
	for c.pump.Threads().Len() > 0 {
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatal("the callee's conversation did not end when the caller's gateway was removed")
		}
	}
}
