package oob

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestCancelThreadOverOOB: cancel-thread stops the answer in flight of the
// conversation a thread belongs to — its running handler is cancelled with
// pump.ErrCancelled — and keeps the conversation: a message continuing it
// runs. Cancelling it with nothing in flight is ALREADY_ENDED, a thread no
// conversation has NOT_FOUND, an empty thread-id INVALID_ARGUMENT.
func TestCancelThreadOverOOB(t *testing.T) {
	f := newFixture(t, nil)
	entered, cause := make(chan struct{}, 2), make(chan error, 2)
	pt, err := xmlpipe.PayloadTypeOf[SlowJob]()
	if err != nil {
		t.Fatal(err)
	}
	slow := pump.Listener{Name: "slowjob", Payload: pt,
		Handler: xmlpipe.Typed(func(ctx context.Context, in *SlowJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			entered <- struct{}{}
			if in.Label != "runaway" {
				return nil, nil
			}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		})}
	if err := f.org.Pump.AddListener(slow); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	thread, err := f.org.Pump.Send(ctx, "operator", "slowjob", &SlowJob{Label: "runaway"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-entered

	if r := f.do(t, `<cancel-thread><thread-id>`+thread+`</thread-id></cancel-thread>`); r.Payload.Ack == nil ||
		r.Payload.Ack.Message != "conversation "+thread+" cancelled; it goes on" {
		t.Fatalf("cancel-thread: %+v", r.Payload)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, pump.ErrCancelled) {
			t.Errorf("the handler was cancelled with %v, want %v", err, pump.ErrCancelled)
		}
	case <-ctx.Done():
		t.Fatal("the running handler was never cancelled")
	}
	for f.org.Pump.Running(thread) {
		select {
		case <-ctx.Done():
			t.Fatal("the cancelled conversation never completed")
		case <-time.After(time.Millisecond):
		}
	}
	r := f.do(t, `<cancel-thread><thread-id>`+thread+`</thread-id></cancel-thread>`)
	if r.Payload.Error == nil || r.Payload.Error.Code != CodeEnded {
		t.Fatalf("cancelling it with nothing in flight: %+v, want %s", r.Payload, CodeEnded)
	}
	again := stage.AppendEnvelope(nil, "operator", "slowjob", thread, []byte(`<SlowJob xmlns=""><Label>again</Label></SlowJob>`))
	if _, err := f.org.Pump.InjectWait(ctx, again, nil); err != nil {
		t.Fatalf("continuing the cancelled conversation: %v", err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the continuation never ran")
	}
	r = f.do(t, `<cancel-thread><thread-id>`+stage.NewThreadID()+`</thread-id></cancel-thread>`)
	if r.Payload.Error == nil || r.Payload.Error.Code != CodeNotFound {
		t.Fatalf("cancelling a thread never used: %+v, want %s", r.Payload, CodeNotFound)
	}
	r = f.do(t, `<cancel-thread><thread-id> </thread-id></cancel-thread>`)
	if r.Payload.Error == nil || r.Payload.Error.Code != CodeInvalidArgument {
		t.Fatalf("cancelling no thread: %+v, want %s", r.Payload, CodeInvalidArgument)
	}
}
