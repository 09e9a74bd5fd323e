package pump_test

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestSendEnvelope drives the one helper senders build and inject through:
// a new conversation on a fresh thread, a given thread, a principal that
// may and may not send as From, a reserved sender and an unknown listener.
func TestSendEnvelope(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "echo", pr))
	body := []byte(`<Ping xmlns=""><Text>hi</Text></Ping>`)
	alice := &pump.Principal{From: "websocket:alice", User: "alice", FreshThread: true}
	given := stage.NewThreadID()
	tests := []struct {
		name       string
		e          pump.Envelope
		wantThread string // "" : any fresh thread id
		wantFrom   string
		wantErr    error // nil: accepted and handled
	}{
		{"new conversation", pump.Envelope{From: client, To: "echo", Payload: body}, "", client, nil},
		{"given thread", pump.Envelope{From: client, To: "echo", Thread: given, Payload: body}, given, client, nil},
		{"as a principal", pump.Envelope{From: alice.From, To: "echo", Payload: body, As: alice}, "", alice.From, nil},
		{"forged for the principal", pump.Envelope{From: "websocket:bob", To: "echo", Payload: body, As: alice}, "", "",
			pump.ErrForgedSender},
		{"reserved sender", pump.Envelope{From: "core", To: "echo", Payload: body}, "", "", failure.ErrForbiddenSender},
		{"unknown listener", pump.Envelope{From: client, To: "nobody", Payload: body}, "", "", failure.ErrNoRoute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			thread, err := p.SendEnvelope(waitCtx(t), tt.e, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || failureOf(err) == nil {
					t.Fatalf("SendEnvelope = %q, %v; want a *failure.Failure wrapping %v", thread, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SendEnvelope: %v", err)
			}
			if tt.wantThread != "" && thread != tt.wantThread || !stage.IsThreadID(thread) {
				t.Fatalf("thread = %q, want %q (a thread id)", thread, tt.wantThread)
			}
			c := pr.next(t)
			if c.MD.From != tt.wantFrom || c.MD.ThreadID != thread || c.Payload.(*Ping).Text != "hi" {
				t.Fatalf("echo got %+v from %q on %q; want hi from %q on %q", c.Payload, c.MD.From, c.MD.ThreadID,
					tt.wantFrom, thread)
			}
		})
	}
}
