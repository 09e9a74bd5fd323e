package pump_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestErrorHandlerRefusedOutputIsDeadLetter: a message a plain listener's
// error handler sends that the pump refuses — to no listener, a payload its
// recipient does not take, a raw tag nobody takes, a send with a ref that
// names no one or cannot be encoded — is a dead letter, not a
// new <huh> to that error handler, which would send again, for ever (the
// error handler runs on the same thread each time, so MaxChainDepth never
// stops it). The Ask that began the conversation ends with a failure
// instead of waiting for its deadline.
func TestErrorHandlerRefusedOutputIsDeadLetter(t *testing.T) {
	tests := []struct {
		name    string
		onError xmlpipe.Response
	}{
		{name: "send to no listener", onError: xmlpipe.Send("nobody-there", &Answer{Text: "still lost"})},
		{name: "payload its recipient does not take", onError: xmlpipe.Send("sink", &Pong{Text: "not a Ping"})},
		{name: "raw tag nobody takes", onError: xmlpipe.Raw([]byte("<Nowhere>still lost</Nowhere>"))},
		{name: "raw payload its recipient does not take", onError: xmlpipe.Raw([]byte("<Ping><Nope/></Ping>"))},
		{name: "send with a ref to no one", onError: &xmlpipe.SendResponse{To: " ", Payload: &Answer{Text: "x"}, Ref: "r1"}},
		{name: "send with a ref of a payload that cannot be encoded",
			onError: &xmlpipe.SendResponse{To: "sink", Payload: make(chan int), Ref: "r1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var heard atomic.Int64
			lost := withErrorHandler(pump.Listener{Name: "lost", Payload: payloadType[Question](t),
				Handler: xmlpipe.Typed(func(context.Context, *Question, xmlpipe.Metadata) (xmlpipe.Response, error) {
					return xmlpipe.Send("nobody-here", &Answer{Text: "lost"}), nil
				})}, func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
				heard.Add(1)
				return tt.onError, nil
			})
			sink := listenerOf(t, "sink", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
			// The loop this guards against logs thousands of lines a second.
			p := startPump(t, pump.Options{Logger: slog.New(slog.DiscardHandler)}, lost, sink)
			rec := newRecorder()
			defer p.Subscribe(rec)()
			ctx, cancel := context.WithTimeout(t.Context(), 4*waitTimeout)
			defer cancel()
			_, err := p.Ask(ctx, client, "lost", &Question{Text: "where"})
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Ask = %v, want the conversation's failure before its deadline (error handler heard %d errors)",
					err, heard.Load())
			}
			rec.waitFor(t, "the dead letter of the error handler's output", kind(pump.EventDeadLetter))
			rec.waitFor(t, "the conversation's end", kind(pump.EventComplete))
			if got := heard.Load(); got != 1 {
				t.Errorf("the error handler heard %d errors, want 1", got)
			}
		})
	}
}
