package pump_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestErrorHandlerAnswerRefusedOnce: an error handler whose answer is
// refused (a payload its caller does not take) hears of it no more — the
// refusal is a dead letter — instead of answering the refusal again, for
// ever.
func TestErrorHandlerAnswerRefusedOnce(t *testing.T) {
	var errorsHeard atomic.Int64
	asker := listenerOf(t, "asker", func(_ context.Context, p *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("answerer", &ChainA{Text: p.Text}), nil
	})
	answerer := withErrorHandler(
		listenerOf(t, "answerer", func(_ context.Context, p *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Respond(&Pong{Text: p.Text}), nil // asker takes <Ping>, not <Pong>
		}),
		func(_ context.Context, _ *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			errorsHeard.Add(1)
			return xmlpipe.Respond(&Pong{Text: "still the wrong payload"}), nil
		})
	p := startPump(t, pump.Options{}, asker, answerer)
	rec := newRecorder()
	mustSend(t, p, client, "asker", &Ping{Text: "x"}, rec)
	rec.waitFor(t, "the conversation's end", kind(pump.EventComplete))
	if got := errorsHeard.Load(); got != 1 {
		t.Errorf("the error handler heard %d errors, want 1", got)
	}
}

// TestAgentErrorHandlerRetries: an agent's error handler is fed the refusal
// of its own corrected answer again — its model may correct it once more,
// within max_iterations — where a plain listener's would loop for ever.
func TestAgentErrorHandlerRetries(t *testing.T) {
	var errorsHeard atomic.Int64
	fixed := make(chan string, 1)
	asker := listenerOf(t, "asker", func(_ context.Context, p *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if p.Text == "fixed" {
			fixed <- p.Text
			return nil, nil
		}
		return xmlpipe.Send("answerer", &ChainA{Text: p.Text}), nil
	})
	answerer := agent(withErrorHandler(
		listenerOf(t, "answerer", func(_ context.Context, p *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Respond(&Pong{Text: p.Text}), nil // asker takes <Ping>, not <Pong>
		}),
		func(_ context.Context, _ *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			if errorsHeard.Add(1) == 1 {
				return xmlpipe.Respond(&Pong{Text: "still the wrong payload"}), nil
			}
			return xmlpipe.Respond(&Ping{Text: "fixed"}), nil
		}))
	p := startPump(t, pump.Options{}, asker, answerer)
	rec := newRecorder()
	mustSend(t, p, client, "asker", &Ping{Text: "x"}, rec)
	rec.waitFor(t, "the conversation's end", kind(pump.EventComplete))
	select {
	case <-fixed:
	default:
		t.Fatalf("the agent's second correction never reached its caller (errors heard: %d)", errorsHeard.Load())
	}
	if got := errorsHeard.Load(); got != 2 {
		t.Errorf("the agent's error handler heard %d errors, want 2", got)
	}
}
