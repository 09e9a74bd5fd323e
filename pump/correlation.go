package pump

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Correlation: a handler that sends with a ref (xmlpipe.SendResponse.Ref)
// learns which of its messages an answer is about.
//
//   - The ref is kept with the child thread the message opens
//     (registry.Threads.ExtendRef), durable with the thread registry.
//   - A reply travelling back from that thread — after any number of hops
//     below it — is built with the thread's ref in its envelope's <meta>
//     (stage.AppendEnvelopeInReplyTo); so is a <huh> or SystemError about
//     the message itself (its validation failed, its peer is not allowed, its
//     target's handler failed or timed out). The journal keeps the ref with
//     the envelope, so a re-delivery after a restart carries it too.
//   - Ingress reads the ref of an envelope the pump built (never of one from
//     outside) into the delivery, and the handler gets it as
//     Metadata.InReplyTo (the context-buffer slot as Slot.InReplyTo).
//
// Nothing a handler writes can set or change the ref of another message:
// handlers return payloads, and only the pump writes <meta>.

// peersIn resolves an agent's peer names against routing snapshot t: their
// descriptions and payload types (nil for a name no listener has), as
// handlers get them (Metadata.Peers), and the same as gen.Peers for the
// usage instructions.
func peersIn(t *table, names []string, pr *profile) ([]xmlpipe.Peer, []gen.Peer) {
	peers := make([]xmlpipe.Peer, 0, len(names))
	described := make([]gen.Peer, 0, len(names))
	for _, name := range names {
		peer, gp := xmlpipe.Peer{Name: name}, gen.Peer{Name: name}
		if pl := t.lookup(name); pl != nil && pr.reaches(pl) {
			peer.Description, peer.Payload = pl.Description, pl.Payload
			gp.Description, gp.Type = pl.Description, pl.Payload.Model()
		}
		peers = append(peers, peer)
		described = append(described, gp)
	}
	return peers, described
}

// agentPeerSet builds an agent's peer set over names with its usage
// instructions and resolved peers from routing snapshot t.
func agentPeerSet(l *listener, t *table, names []string) *peerSet {
	next := newPeerSet(names)
	var described []gen.Peer
	next.peers, described = peersIn(t, names, nil)
	next.usage = gen.UsageInstructions(l.Name, l.Description, described)
	return next
}

// encodePayload returns the payload type of a handler's output value and
// its encoded payload element; canonical reports that the encoding is
// exclusive C14N already (see xmlpipe.PayloadType.Canonical). An
// *xmlpipe.Encoded payload is taken as written.
func (p *Pump) encodePayload(v any) (pt *xmlpipe.PayloadType, body []byte, canonical bool, err error) {
	if e, ok := v.(*xmlpipe.Encoded); ok {
		if e == nil || e.Type == nil || len(e.XML) == 0 {
			return nil, nil, false, fmt.Errorf("%w: an encoded payload needs its type and XML", failure.ErrEncode)
		}
		return e.Type, e.XML, false, nil
	}
	if pt, err = p.payloadTypeOf(v); err != nil {
		return nil, nil, false, err
	}
	if body, err = pt.AppendPayload(nil, v); err != nil {
		return nil, nil, false, err
	}
	return pt, body, pt.Canonical(), nil
}

// asAgentText turns an answer for an agent that takes another payload into
// the agent's own text payload holding the answer's JSON form
// (codec.JSONOf): an agent's input is text for its model, and the answer
// could not be routed to it in its own type. ok is false when the agent's
// payload has no text field or the answer has no JSON form.
func asAgentText(agent *listener, pt *xmlpipe.PayloadType, v any) (any, bool) {
	if e, isEncoded := v.(*xmlpipe.Encoded); isEncoded {
		decoded, err := e.Type.Decode(e.XML)
		if err != nil {
			return nil, false
		}
		v = decoded
	}
	obj, err := codec.JSONOf(pt.Model(), v)
	if err != nil {
		return nil, false
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	return stage.NewTextPayload(agent.Payload.GoType(), string(b))
}

// errorDetail words diagnostics as the detail of a <huh> for a listener
// inside the organism (xmlpipe.DeliveryError.Detail).
func errorDetail(diags []failure.Diagnostic) string {
	var b strings.Builder
	for i, d := range diags {
		if i == 8 {
			fmt.Fprintf(&b, "; … %d more", len(diags)-8)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		if d.Line > 0 {
			fmt.Fprintf(&b, "line %d: ", d.Line)
		}
		if d.Path != "" {
			b.WriteString(d.Path)
			b.WriteString(": ")
		}
		b.WriteString(d.Msg)
	}
	return b.String()
}

// payloadTypeOfAny is payloadTypeOf that also knows an *xmlpipe.Encoded.
func (p *Pump) payloadTypeOfAny(v any) (*xmlpipe.PayloadType, error) {
	if e, ok := v.(*xmlpipe.Encoded); ok && e != nil && e.Type != nil {
		return e.Type, nil
	}
	return p.payloadTypeOf(v)
}
