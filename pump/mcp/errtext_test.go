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

// failingListener fails with an error chain full of internals (a meta
// refusal's reason, a backend URL, a path), or panics with them.
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
			default:
				return nil, errors.New("backend http://10.0.0.7:8080/v1/chat: dial tcp: connection refused")
			}
		})}
}

// TestToolErrorsCarryTheWireText: a call whose conversation fails is told
// what the wire tells a sender — the canned <huh> text — and nothing of the
// error chain behind it: no refusal reason, listener name, URL or path.
func TestToolErrorsCarryTheWireText(t *testing.T) {
	o := startOrganism(t, failingListener(t))
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
	for _, tc := range []struct{ how, want string }{
		{"refuse", failure.HuhPayload},
		{"error", failure.HuhProcessing},
		{"panic", failure.HuhProcessing},
	} {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "failing", Arguments: map[string]any{"How": tc.how}})
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
