package pump_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// An Ask under KeepOnCancel whose context ends only stops waiting: it
// returns the context's cause at once, and its conversation runs on — the
// handler's call is not cancelled, its answer is delivered and the
// conversation completes as it would have, not killed.
func TestAskKeepOnCancel(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	handled := make(chan error, 1)
	p := startPump(t, pump.Options{},
		listenerOf(t, "slow", func(ctx context.Context, q *Question, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			started <- struct{}{}
			select {
			case <-release:
				handled <- nil
				return xmlpipe.Respond(&Answer{Text: "late: " + q.Text}), nil
			case <-ctx.Done():
				handled <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
		}))
	completed := make(chan pump.Event, 1)
	replies := make(chan pump.Event, 1)
	defer p.Subscribe(pump.OutletFunc(func(e pump.Event) {
		switch {
		case e.Kind == pump.EventComplete:
			select {
			case completed <- e:
			default:
			}
		case e.Kind == pump.EventReply && e.From == "slow":
			replies <- e
		}
	}))()
	ctx, cancel := context.WithCancelCause(pump.KeepOnCancel(t.Context()))
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(ctx, client, "slow", &Question{Text: "hi"})
		errc <- err
	}()
	deadline := time.After(time.Minute)
	select {
	case <-started:
	case <-deadline:
		t.Fatal("the handler never started")
	}
	stop := errors.New("the caller stopped waiting")
	cancel(stop)
	select {
	case err := <-errc:
		if !errors.Is(err, stop) {
			t.Errorf("Ask = %v, want it to wrap %v", err, stop)
		}
	case <-deadline:
		t.Fatal("Ask did not return after its context ended")
	}
	close(release)
	select {
	case err := <-handled:
		if err != nil {
			t.Fatalf("the handler's call was cancelled: %v", err)
		}
	case <-deadline:
		t.Fatal("the handler never returned")
	}
	select {
	case e := <-replies:
		if a, ok := e.Payload.(*Answer); !ok || a.Text != "late: hi" {
			t.Errorf("reply %#v", e.Payload)
		}
	case <-deadline:
		t.Fatal("the answer was not delivered")
	}
	select {
	case e := <-completed:
		if e.Error != "" {
			t.Errorf("the conversation completed with %q, want as it would have", e.Error)
		}
	case <-deadline:
		t.Fatal("the conversation never completed")
	}
}
