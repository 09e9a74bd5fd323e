// Package xmlpipe is the handler API: a listener is a Go payload type (its
// contract, PayloadTypeOf) and a Handler (Typed) that answers with Send,
// Respond, Raw or nil. The pump owns routing and thread identity; a handler
// sees only its decoded payload and Metadata. A handler never blocks on
// another listener: it calls one with SendRef, and the answer comes as a
// new call with Metadata.InReplyTo set, a failure to its ErrorHandler.
//
// The message stages and the XML toolbox the pump and tools use are in
// xmlpipe/stage, a failed message's errors in xmlpipe/failure.
package xmlpipe

import (
	"context"
	"fmt"
	"reflect"
)

// Metadata is what a handler learns about the message it is handling. It never
// contains a thread path, only the opaque thread UUID.
type Metadata struct {
	// ThreadID is the opaque UUID of the thread the message travels on.
	ThreadID string
	// From is the name of the immediate sender, injected by the pump.
	From string
	// Conversation is the opaque id of the conversation the message belongs
	// to: the same for each of its hops (each of which travels on a thread
	// of its own) and for its continuations, another for every other
	// conversation. Set by the pump; a tool keeps per-conversation state
	// under it (key_value's default namespace).
	Conversation string
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
	// InReplyTo is the correlation ref of the message this one answers: the
	// Ref the receiving listener gave a SendResponse, when what arrives is
	// the reply to that message (a Respond from the thread it opened, however
	// many hops that took) or a <huh> or SystemError about it; "" for
	// anything else. The pump sets it from its own records — the thread the
	// message was sent on, persisted with the thread registry — never from
	// anything the answering listener wrote, so it cannot be forged.
	InReplyTo string
	// Peers are the listeners an agent may address, in its peers list
	// order, with their descriptions and payload contracts (agents only).
	// The slice is shared and read-only: never modify it. It changes only
	// when the agent's peers do (a reload, Pump.AddPeers). A peer outside
	// the thread's profile is given as one that does not exist: its name
	// alone, without description or payload contract.
	Peers []Peer
	// Profile is the security profile (seed 000 §8.4) the handler's own
	// messages travel under: the thread's profile, narrowed by the
	// listener's own when it has one. It says which listeners those
	// messages can reach and which network addresses the handler may dial.
	// nil means no profile: every listener, any address.
	Profile Profile
}

// Peer is a listener an agent may address.
type Peer struct {
	// Name is the peer's listener name.
	Name string
	// Description is the peer's description.
	Description string
	// Payload is the peer's payload contract; nil when no listener of that
	// name is registered (a gateway's peer, a listener not loaded yet).
	Payload *PayloadType
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
	// Ref, when set, is an opaque correlation ref of the sender's choosing
	// (at most stage.MaxRefBytes of XML characters): the reply to this message,
	// and any <huh> or SystemError about it, reach the sender with
	// Metadata.InReplyTo set to it. Give each message in flight from one
	// thread its own ref.
	Ref string
}

// SendsResponse sends several messages in one response. Each is handled as
// a Send of its own (with its own thread, so replies never share one), and
// what they produce is journaled as one group — all or none after a crash —
// before any of them is handed on; their targets then run concurrently.
type SendsResponse struct {
	Sends []*SendResponse
}

// AwaitResponse sends nothing and keeps the thread open: the handler waits
// for the answers to messages it sent earlier. A nil Response would end the
// thread instead, and with it the threads those messages travel on.
type AwaitResponse struct{}

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
func (*SendsResponse) response()   {}
func (*AwaitResponse) response()   {}
func (*RespondResponse) response() {}
func (*RawResponse) response()     {}

// Send forwards payload to the listener named to. For agents the pump enforces
// the peers list.
func Send(to string, payload any) Response { return &SendResponse{To: to, Payload: payload} }

// SendRef forwards payload to the listener named to with a correlation ref:
// the reply, or a <huh> or SystemError about the message, comes back with
// Metadata.InReplyTo == ref.
func SendRef(to string, payload any, ref string) *SendResponse {
	return &SendResponse{To: to, Payload: payload, Ref: ref}
}

// SendAll sends every message of sends in one response (see SendsResponse).
func SendAll(sends ...*SendResponse) Response { return &SendsResponse{Sends: sends} }

// Await sends nothing and keeps the thread open for the answers still to
// come (see AwaitResponse).
func Await() Response { return &AwaitResponse{} }

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
// message for the listener into a *T before calling it, and refuses to
// register it for a listener of another payload type (HandlerPayload).
func Typed[T any](f func(ctx context.Context, p *T, md Metadata) (Response, error)) Handler {
	return typed[T](f)
}

// typed is the Handler Typed returns.
type typed[T any] func(ctx context.Context, p *T, md Metadata) (Response, error)

// Handle calls f with payload, which must be a *T.
func (f typed[T]) Handle(ctx context.Context, payload any, md Metadata) (Response, error) {
	p, ok := payload.(*T)
	if !ok {
		var zero T
		return nil, fmt.Errorf("xmlpipe: handler wants *%T, got %T", zero, payload)
	}
	return f(ctx, p, md)
}

func (typed[T]) payloadType() reflect.Type { return reflect.TypeFor[T]() }

// HandlerPayload returns the payload struct type h takes, when it says
// (a Typed handler does): ok is false for one that takes any.
func HandlerPayload(h Handler) (t reflect.Type, ok bool) {
	if th, ok := h.(interface{ payloadType() reflect.Type }); ok {
		return th.payloadType(), true
	}
	return nil, false
}

// ErrorHandler is an optional capability of a Handler: a listener that implements
// it receives the <huh> and SystemError messages addressed to it (LLM agents feed
// them back into the conversation). Listeners without it have such messages logged;
// when one of their answers (Respond) is refused, the pump tells their caller
// instead, which would otherwise wait for an answer that never comes.
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
	// Detail is what the pump knows of the failure beyond the canned text:
	// the validation errors of a message the listener sent, the error its
	// peer's handler returned, a timeout. It reaches listeners inside the
	// organism only (their own messages' failures) and is "" when the pump
	// has nothing to add or the error was re-delivered after a restart.
	Detail string
}
