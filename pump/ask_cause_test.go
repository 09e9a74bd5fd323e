package pump_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// errAskBoom is what the failing handler of TestAskErrorCause returns.
var errAskBoom = errors.New("boom on purpose")

// TestAskErrorCause: an Ask whose conversation failed returns an
// *AskError that errors.Is finds the failure's cause in — the handler's
// timeout, its own error, the hop limit, a refused send — while the
// failure's text stays the canned text the wire carries.
func TestAskErrorCause(t *testing.T) {
	tests := []struct {
		name  string
		opts  pump.Options
		ls    func(t *testing.T) []pump.Listener
		to    string
		ask   any
		wants []error
	}{
		{
			name: "the handler timed out",
			ls: func(t *testing.T) []pump.Listener {
				l := listenerOf(t, "slow", func(ctx context.Context, _ *Question, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
					<-ctx.Done()
					return nil, nil
				})
				l.Timeout = 20 * time.Millisecond
				return []pump.Listener{l}
			},
			to: "slow", ask: &Question{Text: "wait"},
			wants: []error{pump.ErrHandlerTimeout, xmlpipe.ErrHandlerTimeout, failure.ErrHandler},
		},
		{
			name: "the handler failed",
			ls: func(t *testing.T) []pump.Listener {
				return []pump.Listener{listenerOf(t, "broken", func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
					return nil, errAskBoom
				})}
			},
			to: "broken", ask: &Question{Text: "go"},
			wants: []error{errAskBoom, failure.ErrHandler},
		},
		{
			name: "the chain exceeded its hop limit",
			opts: pump.Options{MaxChainDepth: chainLimit},
			ls: func(t *testing.T) []pump.Listener {
				var calls atomic.Int64
				var names []string
				return cycle(t, 2, 0, &calls, &names)
			},
			to: "a", ask: &ChainA{},
			wants: []error{pump.ErrChainTooDeep},
		},
		{
			name: "a listener's send was refused",
			ls: func(t *testing.T) []pump.Listener {
				return []pump.Listener{listenerOf(t, "lost", func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
					return xmlpipe.Send("nobody-here", &Answer{Text: "lost"}), nil
				})}
			},
			to: "lost", ask: &Question{Text: "go"},
			wants: []error{failure.ErrNoRoute},
		},
		// A failure about a failure is a dead letter; its cause is kept.
		{
			name: "the error handler failed (a dead letter)",
			ls: func(t *testing.T) []pump.Listener {
				return []pump.Listener{lostWithErrorHandler(t, func() (xmlpipe.Response, error) { return nil, errAskBoom })}
			},
			to: "lost", ask: &Question{Text: "go"},
			wants: []error{errAskBoom},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startPump(t, tc.opts, tc.ls(t)...)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			_, err := p.Ask(ctx, client, tc.to, tc.ask)
			ae, ok := errors.AsType[*pump.AskError](err)
			if !ok {
				t.Fatalf("Ask = %v, want an *AskError", err)
			}
			if strings.HasSuffix(tc.name, "(a dead letter)") && ae.Event.Kind != pump.EventDeadLetter {
				t.Errorf("Ask = %v: a failure of kind %s, want %s", err, ae.Event.Kind, pump.EventDeadLetter)
			}
			for _, want := range tc.wants {
				if !errors.Is(err, want) {
					t.Errorf("Ask = %v (cause %v): errors.Is(err, %q) is false", err, ae.Event.Cause, want)
				}
			}
			// The cause is for in-process callers only: the failure's
			// text is what a <huh> says on the wire.
			if h, ok := ae.Event.Payload.(*xmlpipe.Huh); ok {
				if diff := cmp.Diff(h.Error, ae.Event.Error); diff != "" {
					t.Errorf("the failure's text is not its <huh>'s (-huh +event):\n%s", diff)
				}
			}
		})
	}
}

// lostWithErrorHandler is the listener "lost": it sends to a listener that
// does not exist, and its error handler, told so, answers with onError.
func lostWithErrorHandler(t *testing.T, onError func() (xmlpipe.Response, error)) pump.Listener {
	l := listenerOf(t, "lost", func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("nobody-here", &Answer{Text: "lost"}), nil
	})
	l.Handler = errorAware{Handler: l.Handler,
		onError: func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return onError()
		}}
	return l
}
