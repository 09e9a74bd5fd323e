package federation

import (
	"context"
	"testing"
	"time"
)

// TestLinkMadeWhileStoppingIsClosed: a link whose handshake completes
// after the manager stopped (Stop closes the links it finds) is closed at
// once instead of being served, so Close does not wait for it forever.
func TestLinkMadeWhileStoppingIsClosed(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	g := a.m.gateways[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, p, err := g.dial(ctx) // made while the manager runs
	if err != nil {
		t.Fatal(err)
	}
	a.m.Stop()
	served := make(chan struct{})
	go func() {
		g.attach(ws, p, true) // the handshake completed after Stop
		close(served)
	}()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		_ = ws.Close()
		t.Fatal("a link made while the manager stopped was served")
	}
	closed := make(chan error, 1)
	go func() { closed <- a.m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close never returned")
	}
}
