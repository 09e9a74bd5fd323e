package federation

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Directions of an envelope for Observer.Envelope.
const (
	// DirectionIn is an envelope accepted from the peer (signature, age and
	// replay checks passed).
	DirectionIn = "in"
	// DirectionOut is an envelope queued for the peer (or, for meta
	// traffic, written on the live link).
	DirectionOut = "out"
)

// Reasons of Observer.Refused: what this side refused of the peer's, and
// RefusedByPeer for what the peer refused of ours.
const (
	RefusedSignature   = "signature"    // the envelope's signature does not verify
	RefusedMalformed   = "malformed"    // not a federated envelope
	RefusedStale       = "stale"        // sent too long ago (or in the future)
	RefusedDuplicate   = "duplicate"    // received before (a replay or a resend)
	RefusedPrivileged  = "privileged"   // a privileged or system root
	RefusedNotExported = "not-exported" // a call for a root tag the gateway does not export
	RefusedBadThread   = "bad-thread"   // a call whose link thread is not a thread id
	RefusedBadHops     = "bad-hops"     // a call whose hop count is not one
	RefusedTooDeep     = "too-deep"     // a call whose chain had made max_chain_depth hops already
	RefusedUndelivered = "undelivered"  // a call the pump did not accept
	RefusedUnknownKind = "unknown-kind" // an envelope of a kind this side does not know
	RefusedForgedFrom  = "forged-from"  // an envelope whose <from> is not the organism the peer's handshake named
	RefusedHandshake   = "handshake"    // a link whose handshake failed: inbound, or one this side dialed
	RefusedByPeer      = "by-peer"      // the peer nacked one of this side's envelopes
)

// UnknownGateway is the gateway label of a refused inbound link whose
// dialer names no configured gateway (or none at all): never the name it
// claimed, which would let anyone grow the label set.
const UnknownGateway = "unknown"

// Observer sees what the gateways carry; the organism's metrics implement
// it (Options.Observer). Its methods are called on the links' goroutines:
// they must be cheap and never block.
type Observer interface {
	// Envelope counts one envelope of kind crossing gateway's link in
	// direction (DirectionIn or DirectionOut).
	Envelope(gateway, direction string, kind Kind)
	// Refused counts one envelope or link refused for reason (one of the
	// Refused* constants). gateway is "" for an inbound link that matched
	// no gateway.
	Refused(gateway, reason string)
	// RoundTrip records how long an answered call took, from queueing the
	// call to its answer.
	RoundTrip(gateway string, d time.Duration)
}

// TraceJoiner continues a peer's trace in the conversation a call from the
// peer begins (observe.Tracer implements it; Options.Traces).
type TraceJoiner interface {
	// JoinTrace makes the trace of conversation (which has not begun yet)
	// a child of parent, the span that made the call on the peer; forget
	// drops that when the conversation does not begin after all.
	JoinTrace(conversation string, parent trace.SpanContext) (forget func())
}

// envelopeSeen tells the observer (if any) of an envelope; a kind this
// side does not know is told as "other" (a peer cannot grow the
// observer's label sets).
func (g *gateway) envelopeSeen(direction string, kind Kind) {
	if direction == DirectionIn {
		g.envIn.Add(1)
	} else {
		g.envOut.Add(1)
	}
	o := g.m.opts.Observer
	if o == nil {
		return
	}
	switch kind {
	case KindCall, KindReply, KindHuh, KindEnd, KindCancel, KindMeta, KindMetaAnswer, KindExportsChanged:
	default:
		kind = "other"
	}
	o.Envelope(g.name, direction, kind)
}

// refusal tells the observer (if any) of a refusal.
func (m *Manager) refusal(gateway, reason string) {
	if o := m.opts.Observer; o != nil {
		o.Refused(gateway, reason)
	}
}

// traceContext is the W3C trace context format of the <link traceparent>
// attribute.
var traceContext propagation.TraceContext

// traceparent returns the W3C traceparent of the span ctx carries ("" when
// it carries none: tracing is off).
func traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c.Get("traceparent")
}

// joinTrace hands the trace context of the peer's call e to the trace
// joiner for conversation conv; the returned function undoes it (when the
// call is not accepted). Without a joiner or a valid traceparent it does
// nothing.
func (g *gateway) joinTrace(conv string, e *envelope) (forget func()) {
	j := g.m.opts.Traces
	if j == nil || e.Link.Traceparent == "" {
		return func() {}
	}
	sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": e.Link.Traceparent}))
	if !sc.IsValid() {
		g.log.Warn("federation: call with an unreadable traceparent; its trace is not joined", "id", e.Link.ID)
		return func() {}
	}
	return j.JoinTrace(conv, sc)
}
