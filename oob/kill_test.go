package oob

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestKillThreadOverOOB: kill-thread stops the conversation a thread
// belongs to — its running handler is cancelled with
// pump.ErrConversationKilled —, killing it again is ALREADY_ENDED, and a
// thread no conversation has is NOT_FOUND, the organism serving on.
func TestKillThreadOverOOB(t *testing.T) {
	f := newFixture(t, nil)
	entered, cause := make(chan struct{}, 1), make(chan error, 1)
	pt, err := xmlpipe.PayloadTypeOf[SlowJob]()
	if err != nil {
		t.Fatal(err)
	}
	slow := pump.Listener{Name: "slowjob", Payload: pt,
		Handler: xmlpipe.Typed(func(ctx context.Context, _ *SlowJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			entered <- struct{}{}
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

	if r := f.do(t, `<kill-thread><thread-id>`+thread+`</thread-id><reason>runaway</reason></kill-thread>`); r.Payload.Ack == nil ||
		r.Payload.Ack.Message != "conversation "+thread+" killed" {
		t.Fatalf("kill-thread: %+v", r.Payload)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, pump.ErrConversationKilled) {
			t.Errorf("the handler was cancelled with %v, want %v", err, pump.ErrConversationKilled)
		}
	case <-ctx.Done():
		t.Fatal("the running handler was never cancelled")
	}
	r := f.do(t, `<kill-thread><thread-id>`+thread+`</thread-id></kill-thread>`)
	if r.Payload.Error == nil || r.Payload.Error.Code != CodeEnded {
		t.Fatalf("killing it again: %+v, want %s", r.Payload, CodeEnded)
	}
	r = f.do(t, `<kill-thread><thread-id>`+stage.NewThreadID()+`</thread-id></kill-thread>`)
	if r.Payload.Error == nil || r.Payload.Error.Code != CodeNotFound {
		t.Fatalf("killing a thread never used: %+v, want %s", r.Payload, CodeNotFound)
	}
	if s := f.do(t, `<get-status/>`).Payload.Status; s == nil || s.State != "running" {
		t.Fatalf("status after the kill: %+v", s)
	}
}

// TestKillThreadOfACompletedConversation: kill-thread naming a
// conversation that has completed (its thread kept for a continuation)
// answers ALREADY_ENDED and leaves it as it was: its thread stays live.
func TestKillThreadOfACompletedConversation(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ev, err := f.org.Pump.Ask(ctx, "operator", "greeter", &hello.Greeting{Name: "Kim"})
	if err != nil {
		t.Fatal(err)
	}
	conv := ev.Conversation
	if !f.org.Pump.Threads().Known(conv) {
		t.Fatal("precondition: a completed conversation's thread is kept live")
	}
	r := f.do(t, `<kill-thread><thread-id>`+conv+`</thread-id></kill-thread>`)
	if r.Payload.Error == nil || r.Payload.Error.Code != CodeEnded {
		t.Fatalf("kill-thread of a completed conversation: %+v, want %s", r.Payload, CodeEnded)
	}
	if !f.org.Pump.Threads().Known(conv) {
		t.Error("kill-thread ended a completed conversation's thread")
	}
}
