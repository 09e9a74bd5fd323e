// Package xmlpipe is the public library API of the organism and the message stages
// every envelope passes through: size cap, parse/repair, exclusive C14N, envelope
// validation, payload extraction, thread assignment, payload validation and decode.
//
// A listener is a Go payload type plus a Handler. The pump (package pump) owns
// routing and thread identity; a handler only ever sees its decoded payload and
// the Metadata the pump chooses to give it.
package xmlpipe

import (
	"context"
	"fmt"
)

// Metadata is what a handler learns about the message it is handling. It never
// contains a thread path, only the opaque thread UUID.
type Metadata struct {
	// ThreadID is the opaque UUID of the thread the message travels on.
	ThreadID string
	// From is the name of the immediate sender, injected by the pump.
	From string
	// User is the authenticated user who began the conversation (the user
	// of the session identity, kind:user, that sent its first message);
	// "" for the organism's own traffic and for peers without a user. Set
	// by the pump; tools scope what a user may reach with it.
	User string
	// OwnName is the listener's registered name; set for agents only.
	OwnName string
	// IsSelfCall reports whether the sender is the receiving listener itself.
	IsSelfCall bool
	// UsageInstructions is the peer-schema prompt text (agents with peers).
	UsageInstructions string
	// TodoNudge is the "[SYSTEM NOTE: …]" text when todo watchers were raised.
	TodoNudge string
}

// Response is what a handler returns to the pump. A nil Response ends the chain.
// Build one with Send, Respond or Raw.
type Response interface {
	response()
}

// SendResponse forwards Payload to the listener named To, extending the thread.
type SendResponse struct {
	To      string
	Payload any
}

// RespondResponse returns Payload to the caller, pruning the thread.
type RespondResponse struct {
	Payload any
}

// RawResponse carries raw handler or LLM text: it is wrapped in a dummy root,
// repaired, and every root element becomes its own message routed by root tag.
type RawResponse struct {
	Bytes []byte
}

func (*SendResponse) response()    {}
func (*RespondResponse) response() {}
func (*RawResponse) response()     {}

// Send forwards payload to the listener named to. For agents the pump enforces
// the peers list.
func Send(to string, payload any) Response { return &SendResponse{To: to, Payload: payload} }

// Respond returns payload to the caller of the current thread; the chain is pruned
// and sub-threads end.
func Respond(payload any) Response { return &RespondResponse{Payload: payload} }

// Raw returns raw XML text (typically LLM output). Each root element becomes its
// own message, routed by its root tag.
func Raw(b []byte) Response { return &RawResponse{Bytes: b} }

// Handler handles one decoded payload.
type Handler interface {
	Handle(ctx context.Context, payload any, md Metadata) (Response, error)
}

// HandlerFunc adapts an ordinary function to Handler.
type HandlerFunc func(ctx context.Context, payload any, md Metadata) (Response, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, payload any, md Metadata) (Response, error) {
	return f(ctx, payload, md)
}

// Typed adapts a handler over a concrete payload type T. The pump decodes every
// message for the listener into a *T before calling it.
func Typed[T any](f func(ctx context.Context, p *T, md Metadata) (Response, error)) Handler {
	return HandlerFunc(func(ctx context.Context, payload any, md Metadata) (Response, error) {
		p, ok := payload.(*T)
		if !ok {
			var zero T
			return nil, fmt.Errorf("xmlpipe: handler wants *%T, got %T", zero, payload)
		}
		return f(ctx, p, md)
	})
}

// ErrorHandler is an optional capability of a Handler: a listener that implements
// it receives the <huh> and SystemError messages addressed to it (LLM agents feed
// them back into the conversation). Listeners without it have such messages logged.
type ErrorHandler interface {
	HandleError(ctx context.Context, e *DeliveryError, md Metadata) (Response, error)
}

// DeliveryError is a <huh>, a SystemError or a <refusal> delivered to a
// listener.
type DeliveryError struct {
	// Huh is set when the error is a <huh>.
	Huh *Huh
	// System is set when the error is a SystemError.
	System *SystemError
	// Refusal is set when the error is a structured refusal: one of the
	// listener's messages was refused by a constitution rule or a human
	// (or its approval timed out), and its target never saw it.
	Refusal *Refusal
}
