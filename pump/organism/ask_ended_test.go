package organism_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Stall is the payload of a listener that answers only once it is killed.
type Stall struct {
	Text string
}

// TestAskEndedNamesTheConversation: when an Ask's context ends before the
// answer, its error is an *organism.AskEndedError naming the conversation
// the handler worked on, and errors.Is still finds the context's error.
func TestAskEndedNamesTheConversation(t *testing.T) {
	var started sync.Map // Stall.Text → chan string: the thread its handler works on
	stall := func(ctx context.Context, p *Stall, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if ch, ok := started.Load(p.Text); ok {
			ch.(chan string) <- md.ThreadID
		}
		<-ctx.Done() // the Ask's end kills the conversation
		return nil, ctx.Err()
	}
	o := startEmbedded(t, nil, organism.Options{Listeners: []organism.Listener{
		organism.Func("stall", "Answers only once killed", stall)}})
	type askFunc func(ctx context.Context, text string) (pump.Event, error)
	asks := map[string]askFunc{
		"Ask": func(ctx context.Context, text string) (pump.Event, error) {
			return o.Ask(ctx, "stall", &Stall{Text: text})
		},
		"AskText": func(ctx context.Context, text string) (pump.Event, error) {
			return o.AskText(ctx, "stall", text)
		},
		"Continue": func(ctx context.Context, text string) (pump.Event, error) {
			return o.Continue(ctx, "", "stall", &Stall{Text: text})
		},
		"WithInterim": func(ctx context.Context, text string) (pump.Event, error) {
			return o.Ask(ctx, "stall", &Stall{Text: text}, organism.WithInterim(func(organism.Interim) {}))
		},
	}
	for name, ask := range asks {
		for _, deadline := range []bool{false, true} {
			end, want := "cancel", context.Canceled
			if deadline {
				end, want = "deadline", context.DeadlineExceeded
			}
			t.Run(name+"/"+end, func(t *testing.T) {
				text := name + "/" + end
				ch := make(chan string, 1)
				started.Store(text, ch)
				// The context ends once the handler runs: cancelled, or
				// with the cause a passed deadline gives it.
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				type result struct {
					ev  pump.Event
					err error
				}
				done := make(chan result, 1)
				go func() {
					ev, err := ask(ctx, text)
					done <- result{ev, err}
				}()
				var thread string
				select {
				case thread = <-ch:
				case r := <-done:
					t.Fatalf("Ask returned before the handler ran: %+v, %v", r.ev, r.err)
				}
				if deadline {
					cancel(context.DeadlineExceeded)
				} else {
					cancel(nil)
				}
				r := <-done
				ae, ok := errors.AsType[*organism.AskEndedError](r.err)
				if !ok {
					t.Fatalf("error %v (%T), want an *organism.AskEndedError", r.err, r.err)
				}
				if ae.Conversation != thread {
					t.Errorf("Conversation %q, the handler worked on %q", ae.Conversation, thread)
				}
				if !errors.Is(r.err, want) {
					t.Errorf("errors.Is(%v, %v) is false", r.err, want)
				}
			})
		}
	}
}
