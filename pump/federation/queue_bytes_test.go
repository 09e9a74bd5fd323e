package federation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestQueueBytesBound: while the peer is down, the calls waiting for it
// are bounded in bytes too (queue_bytes), not only in number: a call that
// would pass it fails at once with ErrQueueFull saying so, and what waits
// already stays queued.
func TestQueueBytesBound(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCallerWith(t, aKey, c, t.TempDir(), func(gc *config.Gateway) { gc.QueueBytes = 1 })
	c.srv.Close() // the peer is gone: nothing is acknowledged
	defer a.m.Close()
	g := a.m.gateways[0]
	// The first envelope always fits, whatever queue_bytes says.
	if err := g.send(&envelope{Thread: "t", Link: link{Kind: KindEnd, Ref: "t"}}, nil); err != nil {
		t.Fatalf("the first envelope: %v", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "queue_bytes") {
			t.Fatalf("error %v, want ErrQueueFull naming queue_bytes", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call beyond queue_bytes waited instead of failing")
	}
	if s := a.m.Status()[0]; s.Queued != 1 {
		t.Fatalf("queued %d, want the 1 accepted before", s.Queued)
	}
}
