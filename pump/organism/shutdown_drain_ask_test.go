package organism_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// An Ask whose conversation a graceful Shutdown cut short — the drain ran
// out while its handler ran, or while its message still waited behind it —
// fails as its doc says an Ask the organism shut down under does: wrapping
// pump.ErrClosed (and, beside it, the cause its handler was told,
// pump.ErrDrainTimedOut), not as a plain failed conversation.
func TestAskCutByShutdownDrain(t *testing.T) {
	started := make(chan struct{}, 4)
	waiter := organism.Func("waiter", "Waits until cancelled",
		func(ctx context.Context, _ *Wait, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
	waiter.Workers = 1
	o, err := organism.New(nil, organism.Options{Logger: slog.New(slog.DiscardHandler),
		Listeners: []organism.Listener{waiter}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const asks = 2 // one running at the drain's end, one queued behind it
	accepted := make(chan string, asks)
	done := make(chan error, asks)
	for range asks {
		go func() {
			_, err := o.Ask(ctx, "waiter", &Wait{Text: "x"},
				organism.OnConversation(func(c string) { accepted <- c }))
			done <- err
		}()
	}
	for range asks {
		select {
		case <-accepted:
		case <-ctx.Done():
			t.Fatal("the asks were not accepted")
		}
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the handler did not start")
	}
	drain, cancelDrain := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelDrain()
	_ = o.Shutdown(drain) // its error is the drain's: the test below is the asks'
	for range asks {
		select {
		case err := <-done:
			if !errors.Is(err, pump.ErrClosed) {
				t.Errorf("Ask = %v, want it to wrap %v", err, pump.ErrClosed)
			}
		case <-ctx.Done():
			t.Fatal("an Ask did not return after the shutdown")
		}
	}
}
