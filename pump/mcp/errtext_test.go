package mcp

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Failing is the payload of a listener that fails the way it is told.
type Failing struct {
	How string
}

// inputText is what the failing listener says of input it cannot use.
const inputText = "How must say how to fail"

// failingListener fails with an error chain full of internals (a meta
// refusal's reason, a backend URL, a path), or panics with them, or fails
// with an *xmlpipe.InputError ("input"), or answers with a Send to a
// name nobody has ("lost").
func failingListener(t *testing.T) pump.Listener {
	pt, err := xmlpipe.PayloadTypeOf[Failing]()
	if err != nil {
		t.Fatal(err)
	}
	return pump.Listener{Name: "failing", Description: "fails", Payload: pt,
		Handler: xmlpipe.Typed(func(_ context.Context, p *Failing, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			switch p.How {
			case "refuse":
				return nil, fmt.Errorf("meta: question refused: %w: no capability \"secret-agent\" visible to \"mcp\"", failure.ErrNoRoute)
			case "panic":
				panic("open /var/lib/xmlpipe/secret.db: permission denied")
			case "input":
				return nil, fmt.Errorf("failing: %w", &xmlpipe.InputError{Err: errors.New(inputText)})
			case "lost":
				return xmlpipe.Send("nobody", &Failing{How: "lost"}), nil
			default:
				return nil, errors.New("backend http://10.0.0.7:8080/v1/chat: dial tcp: connection refused")
			}
		})}
}

// Relay is the payload of the relaying listener.
type Relay struct {
	How string
}

// relaying passes its How on to the failing listener; its error handler,
// told of that failure, fails in turn with an error naming a backend URL:
// a dead letter whose reason is that error.
type relaying struct{}

func (relaying) Handle(_ context.Context, p any, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	return xmlpipe.Send("failing", &Failing{How: p.(*Relay).How}), nil
}

func (relaying) HandleError(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
	return nil, errors.New("fallback http://10.0.0.8:9090/v1/chat: dial tcp: connection refused")
}

func relayingListener(t *testing.T) pump.Listener {
	pt, err := xmlpipe.PayloadTypeOf[Relay]()
	if err != nil {
		t.Fatal(err)
	}
	return pump.Listener{Name: "relaying", Description: "relays", Payload: pt, Handler: relaying{}}
}

// TestToolErrorsCarryTheWireText: a call whose conversation fails is told
// what the wire tells a sender — the canned <huh> text, or a dead letter's
// — and nothing of the error chain behind it: no refusal reason, listener
// name, URL or path; only an InputError of the listener called, written
// for its caller, is told too.
func TestToolErrorsCarryTheWireText(t *testing.T) {
	o := startOrganism(t, failingListener(t), relayingListener(t))
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-served
		cancel()
		b.Close()
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct{ tool, how, want string }{
		{"failing", "refuse", failure.HuhPayload},
		{"failing", "error", failure.HuhProcessing},
		{"failing", "panic", failure.HuhProcessing},
		{"failing", "input", failure.HuhProcessing + ": " + inputText},
		// an answer that has no route: not the client's message refused
		{"failing", "lost", "Answer <Failing> from failing has no route"},
		{"relaying", "error", failure.Undelivered},
	} {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{"How": tc.how}})
		if err != nil {
			t.Fatalf("%s: %v", tc.how, err)
		}
		if !r.IsError {
			t.Errorf("%s: not a tool error: %q", tc.how, text(r))
		}
		if diff := cmp.Diff(tc.want, text(r)); diff != "" {
			t.Errorf("%s: tool error text (-want +got):\n%s", tc.how, diff)
		}
	}
}

// TestRejectedTextKeepsTheClientsOwnMistakes: a message refused at ingress
// is told with the canned text and the diagnostics of the client's own
// arguments (payload, decode), not those that reveal topology (route).
func TestRejectedTextKeepsTheClientsOwnMistakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *failure.Failure
		want string
	}{
		{"route", &failure.Failure{Stage: failure.StageRoute, Err: failure.ErrNoRoute,
			Diagnostics: []failure.Diagnostic{{Stage: failure.StageRoute, Msg: `no listener "hidden" visible to profile "p"`}}},
			"the message was rejected: Invalid payload structure"},
		{"payload", &failure.Failure{Stage: failure.StagePayload, Err: failure.ErrPayloadInvalid,
			Diagnostics: []failure.Diagnostic{{Stage: failure.StagePayload, Line: 1, Path: "/Greeting/Name", Msg: "too long"}}},
			"the message was rejected: Invalid payload structure: payload line 1 /Greeting/Name: too long"},
		{"too large", &failure.Failure{Stage: failure.StageSize, Err: failure.ErrTooLarge,
			Diagnostics: []failure.Diagnostic{{Stage: failure.StageSize, Msg: "2000000 bytes > 1048576"}}},
			"the message was rejected: Message too large"},
	} {
		if diff := cmp.Diff(tc.want, rejectedText(tc.f)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestFailedText: the tool error of each kind of failed conversation.
func TestFailedText(t *testing.T) {
	inputErr := fmt.Errorf("%w: failing: %w", failure.ErrHandler, &xmlpipe.InputError{Err: errors.New(inputText)})
	handlerErr := fmt.Errorf("%w: failing: backend http://10.0.0.7:8080: refused", failure.ErrHandler)
	for _, tc := range []struct {
		name string
		e    pump.Event
		want string
	}{
		{"input error told to the client", pump.Event{Kind: pump.EventHuh, To: "mcp", Error: failure.HuhProcessing,
			Cause: inputErr}, failure.HuhProcessing + ": " + inputText},
		{"handler error told to the client", pump.Event{Kind: pump.EventHuh, To: "mcp", Error: failure.HuhProcessing,
			Cause: handlerErr}, failure.HuhProcessing},
		{"input error told to a listener", pump.Event{Kind: pump.EventHuh, To: "relaying", Error: failure.HuhProcessing,
			Cause: inputErr}, failure.HuhProcessing},
		{"system error", pump.Event{Kind: pump.EventSystemError, To: "agent", Payload: &xmlpipe.SystemError{Code: "routing",
			Message: "Message could not be delivered. Please verify your target and try again."}},
			"Message could not be delivered. Please verify your target and try again."},
		{"dead letter", pump.Event{Kind: pump.EventDeadLetter, Error: "error handler failed: " + handlerErr.Error()},
			failure.Undelivered},
		{"huh without text", pump.Event{Kind: pump.EventHuh, To: "mcp"}, failure.HuhProcessing},
	} {
		if diff := cmp.Diff(tc.want, failedText(tc.e, "mcp")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestSendTextOfAStorageRefusal: a tool call refused while the organism's
// storage cannot commit says why and that nothing was done; a message
// handed on but not journaled says it will not survive a restart.
func TestSendTextOfAStorageRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"storage", &pump.StorageRefusal{Err: errors.New("disk full: database or disk is full (13)"), RetryAfter: 5 * time.Second},
			"the message could not be sent: the organism cannot journal messages now (disk full: database or disk is full (13)); " +
				"nothing was done; retry later"},
		{"not journaled", fmt.Errorf("%w: store: commit: disk I/O error", pump.ErrNotDurable),
			"the message was handed on but not journaled (the organism could not record it): it may still be answered, " +
				"but it will not survive a restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sendText(tc.err)); diff != "" {
				t.Errorf("sendText (-want +got):\n%s", diff)
			}
		})
	}
}
