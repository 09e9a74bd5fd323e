package pump_test

import (
	"context"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

type collectPing struct{ Text string }
type collectPong struct{ Text string }

// TestIdleThreadsAreCollected: a conversation's threads that nothing ends
// explicitly are freed by the pump's collector once idle past the TTL.
func TestIdleThreadsAreCollected(t *testing.T) {
	threads := registry.NewThreads(registry.ThreadsConfig{Organism: "t", TTL: time.Millisecond})
	p, err := pump.New(pump.Options{Organism: "t", Threads: threads, CollectEvery: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pingT, _ := xmlpipe.PayloadTypeOf[collectPing]()
	pongT, _ := xmlpipe.PayloadTypeOf[collectPong]()
	mustRegister := func(l pump.Listener) {
		if err := p.Register(l); err != nil {
			t.Fatal(err)
		}
	}
	mustRegister(pump.Listener{Name: "a", Payload: pingT, Handler: xmlpipe.Typed(func(_ context.Context, v *collectPing, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("b", &collectPong{Text: v.Text}), nil
	})})
	mustRegister(pump.Listener{Name: "b", Payload: pongT, Handler: xmlpipe.Typed(func(context.Context, *collectPong, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, nil
	})})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	done := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	thread, err := p.Send(ctx, "tester", "a", &collectPing{Text: "x"}, pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			close(done)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	<-done
	for threads.Known(thread) {
		select {
		case <-ctx.Done():
			t.Fatalf("conversation root %s never collected (%d threads live)", thread, threads.Len())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
