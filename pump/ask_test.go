package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Question and Answer are the payloads of the Ask tests.
type Question struct{ Text string }

// Answer is what the answering listeners send.
type Answer struct{ Text string }

// Detour is what "stranded" asks "answerer", whose reply stranded cannot take.
type Detour struct{ Text string }

// askListeners are the listeners of the Ask tests (a broadcast group of
// Question: each is asked by name): "echo" replies to the
// caller, "relay" forwards to "sink", which ends the chain, "quiet" ends it at
// once, "broken" fails, "lost" sends to a listener that does not exist,
// "stranded" forwards to "answerer", whose reply it cannot take, "recovering"
// sends to no listener and, told so, forwards to "sink" instead, and "stuck"
// blocks until its call is cancelled (it reports the cause on stuckCause).
func askListeners(t *testing.T, stuckCause chan<- error, stuckStarted chan<- struct{}) []pump.Listener {
	return []pump.Listener{
		{Name: "echo", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(_ context.Context, q *Question, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Respond(&Answer{Text: "echo: " + q.Text}), nil
			})},
		{Name: "relay", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(_ context.Context, q *Question, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("sink", &Answer{Text: strings.ToUpper(q.Text)}), nil
			})},
		listenerOf(t, "sink", func(context.Context, *Answer, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, nil
		}),
		{Name: "quiet", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })},
		{Name: "broken", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, errors.New("broken on purpose")
			})},
		{Name: "lost", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("nobody-here", &Answer{Text: "lost"}), nil
			})},
		{Name: "stranded", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(_ context.Context, q *Question, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				if md.From == client {
					return xmlpipe.Send("answerer", &Detour{Text: q.Text}), nil
				}
				return xmlpipe.Respond(&Answer{Text: "never: stranded takes no Answer"}), nil
			})},
		listenerOf(t, "answerer", func(_ context.Context, d *Detour, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Respond(&Answer{Text: "answered " + d.Text}), nil
		}),
		withErrorHandler(pump.Listener{Name: "recovering", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("nobody-here", &Answer{Text: "lost"}), nil
			})}, func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("sink", &Answer{Text: "recovered"}), nil
		}),
		{Name: "stuck", Payload: payloadType[Question](t), Broadcast: true,
			Handler: xmlpipe.Typed(func(ctx context.Context, _ *Question, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				stuckStarted <- struct{}{}
				<-ctx.Done()
				stuckCause <- context.Cause(ctx)
				return nil, nil
			})},
	}
}

func TestAsk(t *testing.T) {
	causes, started := make(chan error, 1), make(chan struct{}, 1)
	p := startPump(t, pump.Options{}, askListeners(t, causes, started)...)
	tests := []struct {
		name      string
		to        string
		wantKind  pump.EventKind
		wantFrom  string
		wantText  string
		wantError func(error) bool
	}{
		{name: "reply", to: "echo", wantKind: pump.EventReply, wantFrom: "echo", wantText: "echo: hi"},
		{name: "last message", to: "relay", wantKind: pump.EventMessage, wantFrom: "relay", wantText: "HI"},
		{name: "no answer", to: "quiet", wantError: func(err error) bool { return errors.Is(err, pump.ErrNoAnswer) }},
		{name: "failed", to: "broken", wantError: func(err error) bool {
			e, ok := errors.AsType[*pump.AskError](err)
			return ok && e.Event.Kind == pump.EventHuh
		}},
		{name: "send to no listener", to: "lost", wantError: func(err error) bool {
			// lost has no error handler: the asker is told its answer has
			// no route (TestUnroutedAnswerReachesTheCaller).
			e, ok := errors.AsType[*pump.AskError](err)
			return ok && e.Event.Kind == pump.EventHuh && e.Event.To == client &&
				e.Event.Error == "Answer <Answer> from lost has no route" && errors.Is(err, failure.ErrNoRoute) &&
				strings.Contains(err.Error(), `no listener named "nobody-here"`)
		}},
		{name: "answer refused", to: "stranded", wantError: func(err error) bool {
			// stranded has no error handler: the asker is told its call
			// failed (TestTwoHopFailureReachesTheClient).
			e, ok := errors.AsType[*pump.AskError](err)
			return ok && e.Event.Kind == pump.EventHuh && e.Event.To == client &&
				e.Event.Error == "stranded's call to answerer failed: "+failure.HuhPayload &&
				strings.Contains(err.Error(), "stranded takes <Question>, not <Answer>")
		}},
		{name: "recovered after a huh", to: "recovering", wantKind: pump.EventMessage, wantFrom: "recovering",
			wantText: "recovered"},
		{name: "refused", to: "nobody", wantError: func(err error) bool {
			_, ok := errors.AsType[*failure.Failure](err)
			return ok
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			ev, err := p.Ask(ctx, client, tt.to, &Question{Text: "hi"})
			if tt.wantError != nil {
				if err == nil || !tt.wantError(err) {
					t.Fatalf("Ask(%s) = %+v, %v; want the error", tt.to, ev, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Ask(%s): %v", tt.to, err)
			}
			a, ok := ev.Payload.(*Answer)
			if ev.Kind != tt.wantKind || ev.From != tt.wantFrom || !ok || a.Text != tt.wantText {
				t.Errorf("Ask(%s) = %s from %s, %#v; want %s from %s, %q", tt.to, ev.Kind, ev.From, ev.Payload,
					tt.wantKind, tt.wantFrom, tt.wantText)
			}
			if !strings.Contains(string(ev.Envelope), tt.wantText) {
				t.Errorf("envelope %s does not hold %q", ev.Envelope, tt.wantText)
			}
		})
	}
}

// An Ask whose context ends kills its conversation: the running handler's
// call is cancelled with ErrConversationKilled and Ask returns the cause.
func TestAskCancelKills(t *testing.T) {
	causes, started := make(chan error, 1), make(chan struct{}, 1)
	p := startPump(t, pump.Options{}, askListeners(t, causes, started)...)
	ctx, cancel := context.WithCancelCause(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(ctx, client, "stuck", &Question{Text: "wait"})
		errc <- err
	}()
	select {
	case <-started:
	case <-t.Context().Done():
		t.Fatal("the handler never started")
	}
	stop := errors.New("the caller gave up")
	cancel(stop)
	select {
	case err := <-errc:
		if !errors.Is(err, stop) {
			t.Errorf("Ask = %v, want it to wrap %v", err, stop)
		}
	case <-t.Context().Done():
		t.Fatal("Ask did not return after its context ended")
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, pump.ErrConversationKilled) {
			t.Errorf("handler cause = %v, want ErrConversationKilled", cause)
		}
	case <-t.Context().Done():
		t.Fatal("the handler's call was not cancelled")
	}
}

// An Ask whose conversation an operator kills returns ErrConversationKilled
// (not the last message delivered, as for a chain that ended elsewhere).
func TestAskKilled(t *testing.T) {
	causes, started := make(chan error, 1), make(chan struct{}, 1)
	p := startPump(t, pump.Options{}, askListeners(t, causes, started)...)
	convs := make(chan string, 1)
	defer p.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "stuck" {
			convs <- e.Conversation
		}
	}))()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(t.Context(), client, "stuck", &Question{Text: "wait"})
		errc <- err
	}()
	<-started
	if _, err := p.Kill(<-convs); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, pump.ErrConversationKilled) {
			t.Errorf("Ask = %v, want ErrConversationKilled", err)
		}
	case <-t.Context().Done():
		t.Fatal("Ask did not return after its conversation was killed")
	}
}

func TestAskNotStarted(t *testing.T) {
	p := newPump(t, pump.Options{}, listenerOf(t, "echo", func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, nil
	}))
	if _, err := p.Ask(t.Context(), client, "echo", &Question{}); !errors.Is(err, pump.ErrNotStarted) {
		t.Errorf("Ask before Start = %v, want ErrNotStarted", err)
	}
}

// Concurrent Asks each get their own conversation's answer.
func TestAskConcurrent(t *testing.T) {
	causes, started := make(chan error, 1), make(chan struct{}, 1)
	p := startPump(t, pump.Options{}, askListeners(t, causes, started)...)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			to, text, want := "echo", fmt.Sprint("q", i), fmt.Sprint("echo: q", i)
			if i%2 == 1 {
				to, want = "relay", fmt.Sprint("Q", i)
			}
			ev, err := p.Ask(ctx, client, to, &Question{Text: text})
			if err != nil {
				errs <- fmt.Errorf("Ask %d: %w", i, err)
				return
			}
			if a, ok := ev.Payload.(*Answer); !ok || a.Text != want {
				errs <- fmt.Errorf("Ask %d = %#v, want %q", i, ev.Payload, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// An Ask waiting when the pump stops without draining returns: its
// conversation will not complete in this pump (its messages stay in the
// journal for the next start), so the error wraps ErrClosed and
// ErrShutdown, the cause its running handler saw.
func TestAskShutdownNow(t *testing.T) {
	causes, started := make(chan error, 1), make(chan struct{}, 1)
	p := startPump(t, pump.Options{}, askListeners(t, causes, started)...)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(context.Background(), client, "stuck", &Question{Text: "wait"})
		errc <- err
	}()
	select {
	case <-started:
	case <-t.Context().Done():
		t.Fatal("the handler never started")
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := p.ShutdownNow(ctx); err != nil {
		t.Fatalf("ShutdownNow: %v", err)
	}
	if cause := <-causes; !errors.Is(cause, pump.ErrShutdown) {
		t.Errorf("handler cause = %v, want ErrShutdown", cause)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, pump.ErrClosed) || !errors.Is(err, pump.ErrShutdown) {
			t.Errorf("Ask = %v, want it to wrap ErrClosed and ErrShutdown", err)
		}
	case <-ctx.Done():
		t.Fatal("Ask still waits after ShutdownNow returned")
	}
}
