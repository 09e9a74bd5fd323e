package pump_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestListenerShareIsExact: many senders at once, all waiting for room
// (AdmitWait is long, no pace bound), never get more than a listener's
// share of deliveries into it. The listener has more workers than its
// share, so every delivery it holds runs at once and its handler counts
// them: a sender let in between the admission check and its message's
// queueing, or one taking the room a release handed to a waiter, shows as
// one handler call too many.
func TestListenerShareIsExact(t *testing.T) {
	const (
		budget  = 16 // a listener's share: 16/8 = 2
		share   = 2
		senders = 24
		each    = 40
	)
	var running, most, handled atomic.Int64
	all := make(chan struct{}) // closed once every message was handled
	l := listenerOf(t, "counted", func(ctx context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		for range 20 { // long enough for senders to pile up behind it
			runtime.Gosched()
		}
		running.Add(-1)
		if handled.Add(1) == senders*each {
			close(all)
		}
		return nil, nil
	})
	l.Workers = 8
	p := startPump(t, pump.Options{MaxInFlight: budget, AdmitWait: time.Minute, MaxQueueWait: -1}, l)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				if err := p.Inject(ctx, pingTo(client, "counted", fmt.Sprint("s", s, "m", i)), nil); err != nil {
					errs <- fmt.Errorf("sender %d message %d: %w", s, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		t.Fatalf("handled %d of %d messages", handled.Load(), senders*each)
	}
	if got := most.Load(); got > share {
		t.Errorf("the listener held %d deliveries at once, over its share of %d", got, share)
	}
}
