package federation

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
	"github.com/xml-pipeline/xmlpipe/schemas"
)

// NS is the namespace of the <link> element in a federated envelope's <meta>.
const NS = "https://xml-pipeline.org/ns/federation/v1"

// Path is the federation endpoint on a bus.
const Path = "/federation"

// Kind says what a federated envelope is.
type Kind string

// The envelope kinds.
const (
	// KindCall is a call to one of the receiver's exported root tags.
	KindCall Kind = "call"
	// KindReply carries what the called conversation answered.
	KindReply Kind = "reply"
	// KindHuh carries the <huh> the called conversation ended with.
	KindHuh Kind = "huh"
	// KindEnd says the called conversation completed without an answer:
	// the caller's call ends with none.
	KindEnd Kind = "end"
	// KindCancel says the caller's thread ended while its call was open:
	// the callee kills the conversation it began for the call.
	KindCancel Kind = "cancel"
	// KindMeta is a meta introspection question (answered on the live link,
	// never queued).
	KindMeta Kind = "meta"
	// KindMetaAnswer is the answer to a KindMeta question.
	KindMetaAnswer Kind = "meta-answer"
	// KindExportsChanged says the sender's exports may have changed (it
	// reloaded its listeners): the receiver asks again for its imports on
	// the live link. It carries no payload, is sent on the live link only
	// (a new link asks anyway) and is neither acknowledged nor answered; a
	// peer of an earlier version refuses it as of unknown kind (the sender
	// logs that nack and counts it as a by-peer refusal, nothing more).
	KindExportsChanged Kind = "exports-changed"
)

// Protocol errors.
var (
	// ErrProtocol: a frame that is not what the protocol allows.
	ErrProtocol = errors.New("federation: protocol violation")
	// ErrRefused: the peer refused an envelope (see the error text).
	ErrRefused = errors.New("federation: refused by the peer")
	// ErrQueueFull: the gateway's outbox holds queue_limit messages already.
	ErrQueueFull = errors.New("federation: gateway queue full")
	// ErrTimeout: a call got no answer within the gateway's call_timeout.
	ErrTimeout = errors.New("federation: no answer from the peer in time")
	// ErrClosed: the federation manager is shut down.
	ErrClosed = errors.New("federation: closed")
	// ErrTooLarge: an envelope larger than a link frame may be (the peer
	// would close the link rather than read it).
	ErrTooLarge = errors.New("federation: envelope too large for the link")
	// ErrGatewayRemoved: the gateway was removed (RemoveGateway, an OOB
	// unregister-remote-gateway or re-registration) while a call waited on it.
	ErrGatewayRemoved = errors.New("federation: gateway removed")
)

// link is the <link> element of a federated envelope's <meta>.
type link struct {
	ID   string
	Kind Kind
	// Ref is the call a reply, huh or end belongs to (the call's link
	// thread), or the question a meta-answer answers.
	Ref  string
	Sent time.Time
	// Error is the canned text of a huh or a refused meta question.
	Error string
	// Traceparent is the W3C trace context of the span that made a call
	// (when the caller traces), so the callee's conversation joins its
	// trace. It is inside the signed <meta>.
	Traceparent string
	// Hops is, on a call, how many hops the caller's chain had made when
	// it called (pump.ChainHops): the callee's conversation counts on from
	// it, so max_chain_depth stops a cycle between organisms. Written as
	// the hops attribute (inside the signed <meta>) when not 0; a peer
	// that writes none called with 0, a peer that does not know it
	// ignores it.
	Hops int
	// BadHops is the hops attribute as the peer wrote it when it is not a
	// hop count (negative, not a number, out of range): its call is
	// refused saying so.
	BadHops string
	// Reason is, on a huh, what machine-readable kind of failure it is
	// (ReasonTooDeep; "" for any other), written as the reason attribute
	// (inside the signed <meta>). A peer that does not know it ignores it.
	Reason string
}

// ReasonTooDeep marks a huh, or a nack of a call, that says the
// conversation's chain of forwards exceeded a hop limit (max_chain_depth)
// at the peer: the call fails with a pump.TooDeepError, so the caller's
// conversation stops too instead of going on as if the call had no answer.
const ReasonTooDeep = "too-deep"

// envelope is a federated envelope, built or read.
type envelope struct {
	From, To, Thread string
	Link             link
	// Payload is the payload element's exclusive C14N bytes (empty for end).
	Payload []byte
	// PayloadName and PayloadNS are the payload root's name.
	PayloadName, PayloadNS string
}

// build renders e without a signature (the signer appends it to <meta>).
func (e *envelope) build() []byte {
	b := make([]byte, 0, len(e.Payload)+512)
	b = append(b, `<message xmlns="`+schemas.EnvelopeNS+`"><meta><from>`...)
	b = xmltext.AppendText(b, e.From)
	b = append(b, `</from>`...)
	if e.To != "" {
		b = append(b, `<to>`...)
		b = xmltext.AppendText(b, e.To)
		b = append(b, `</to>`...)
	}
	b = append(b, `<thread>`...)
	b = xmltext.AppendText(b, e.Thread)
	b = append(b, `</thread><link xmlns="`+NS+`"`...)
	// In exclusive C14N's order (attributes sorted by name, every element
	// with an end tag): the envelope is canonical as built, so Sign takes
	// its bytes as they are instead of canonicalising them.
	hops := ""
	if e.Link.Hops != 0 {
		hops = strconv.Itoa(e.Link.Hops)
	}
	for _, a := range [...][2]string{
		{"error", e.Link.Error}, {"hops", hops}, {"id", e.Link.ID}, {"kind", string(e.Link.Kind)},
		{"reason", e.Link.Reason}, {"ref", e.Link.Ref},
		{"sent", e.Link.Sent.UTC().Format(time.RFC3339Nano)}, {"traceparent", e.Link.Traceparent},
	} {
		if a[1] != "" {
			b = append(b, ` `+a[0]+`="`...)
			b = xmltext.AppendAttr(b, a[1])
			b = append(b, '"')
		}
	}
	b = append(b, `></link></meta>`...)
	if len(e.Payload) > 0 {
		b = append(b, e.Payload...)
	} else {
		b = append(b, `<end xmlns="`+NS+`"></end>`...)
	}
	return append(b, `</message>`...)
}

// wireEnvelope is what parse reads of a (verified) federated envelope.
type wireEnvelope struct {
	XMLName xml.Name `xml:"message"`
	Meta    struct {
		From   string `xml:"from"`
		To     string `xml:"to"`
		Thread string `xml:"thread"`
		Link   struct {
			XMLName xml.Name `xml:"https://xml-pipeline.org/ns/federation/v1 link"`
			ID      string   `xml:"id,attr"`
			Kind    string   `xml:"kind,attr"`
			Ref     string   `xml:"ref,attr"`
			Sent    string   `xml:"sent,attr"`
			Error   string   `xml:"error,attr"`
			Trace   string   `xml:"traceparent,attr"`
			Hops    string   `xml:"hops,attr"`
			Reason  string   `xml:"reason,attr"`
		} `xml:"link"`
	} `xml:"meta"`
}

// parse reads a verified federated envelope: its meta, its link element and
// the position of its payload (the element after <meta>). The canonical
// form Sign writes is read by scanning (readCanonical), anything else
// decoded.
func parse(b []byte) (*envelope, error) {
	if m, payload, name, ns, ok := readCanonical(b); ok {
		e, err := fromWire(m)
		if err != nil {
			return nil, err
		}
		e.Payload, e.PayloadName, e.PayloadNS = payload, name, ns
		return e, nil
	}
	return decode(b)
}

// decode is parse with encoding/xml.
func decode(b []byte) (*envelope, error) {
	var w wireEnvelope
	if err := xml.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%w: envelope: %w", ErrProtocol, err)
	}
	if w.XMLName.Space != schemas.EnvelopeNS {
		return nil, fmt.Errorf("%w: root is not {%s}message", ErrProtocol, schemas.EnvelopeNS)
	}
	l := w.Meta.Link
	e, err := fromWire(wireMeta{From: w.Meta.From, To: w.Meta.To, Thread: w.Meta.Thread,
		Link: wireLink{ID: l.ID, Kind: l.Kind, Ref: l.Ref, Sent: l.Sent, Error: l.Error, Trace: l.Trace, Hops: l.Hops, Reason: l.Reason}})
	if err != nil {
		return nil, err
	}
	name, ns, payload, err := payloadOf(b)
	if err != nil {
		return nil, err
	}
	e.PayloadName, e.PayloadNS, e.Payload = name, ns, payload
	return e, nil
}

// fromWire checks a read <meta> and builds the envelope of it.
func fromWire(m wireMeta) (*envelope, error) {
	l := m.Link
	if l.ID == "" || l.Kind == "" {
		return nil, fmt.Errorf("%w: <meta> has no <link id kind>", ErrProtocol)
	}
	sent, err := time.Parse(time.RFC3339Nano, l.Sent)
	if err != nil {
		return nil, fmt.Errorf("%w: <link sent=%q>: %w", ErrProtocol, l.Sent, err)
	}
	e := &envelope{From: m.From, To: m.To, Thread: m.Thread,
		Link: link{ID: l.ID, Kind: Kind(l.Kind), Ref: l.Ref, Sent: sent, Error: l.Error, Traceparent: l.Trace,
			Reason: l.Reason}}
	if l.Hops != "" {
		// Read strictly (decimal digits only) and kept when it is not a
		// count: the call it comes with is refused saying so, where a
		// protocol error would drop it unanswered.
		n, err := strconv.Atoi(l.Hops)
		if err != nil || n < 0 || strings.TrimLeft(l.Hops, "0123456789") != "" {
			e.Link.BadHops = l.Hops
		} else {
			e.Link.Hops = n
		}
	}
	return e, nil
}

// payloadOf finds the one element after <meta> in an envelope and returns
// its name and bytes. The bytes are the element as written: in a canonical
// envelope (what the pump emits and envsig signs) that is its exclusive C14N,
// the namespaces it uses declared on it.
func payloadOf(b []byte) (name, ns string, payload []byte, err error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	depth := 0
	for {
		start := d.InputOffset()
		tok, err := d.RawToken()
		if err != nil {
			return "", "", nil, fmt.Errorf("%w: envelope has no payload element: %w", ErrProtocol, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && t.Name.Local != "meta" {
				if err := skipRaw(d); err != nil {
					return "", "", nil, fmt.Errorf("%w: payload: %w", ErrProtocol, err)
				}
				// RawToken leaves prefixes unresolved: read the namespace
				// of the element from its own declarations (a canonical
				// payload declares what it uses on itself).
				ns := ""
				for _, a := range t.Attr {
					if a.Name.Space == "" && a.Name.Local == "xmlns" {
						ns = a.Value
					} else if t.Name.Space != "" && a.Name.Space == "xmlns" && a.Name.Local == t.Name.Space {
						ns = a.Value
					}
				}
				if t.Name.Space == "" && ns == "" {
					ns = "" // an unqualified payload
				}
				return t.Name.Local, ns, b[start:d.InputOffset()], nil
			}
		case xml.EndElement:
			depth--
		}
	}
}

// skipRaw reads up to the end of the element whose start RawToken just
// returned (Decoder.Skip would read translated tokens and disagree).
func skipRaw(d *xml.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := d.RawToken()
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// frame is a JSON text frame: the handshake, and acknowledgements.
type frame struct {
	Type string `json:"type"`
	// Handshake fields (base64).
	Key      string `json:"key,omitempty"`
	Nonce    string `json:"nonce,omitempty"`
	Sig      string `json:"sig,omitempty"`
	Organism string `json:"organism,omitempty"`
	// Time is the sender's clock as it says hello (or challenges), in
	// RFC 3339: the other side warns of clocks that differ (clockWarn).
	// Not signed, and told only to operators; a peer of an earlier
	// version neither sends nor reads it.
	Time string `json:"time,omitempty"`
	// ID is the acknowledged envelope's link id.
	ID string `json:"id,omitempty"`
	// Duplicate marks the acknowledgement of an envelope already received.
	Duplicate bool `json:"duplicate,omitempty"`
	// Error is why an envelope (nack) or the handshake (error) was refused.
	Error string `json:"error,omitempty"`
	// Reason is what kind of refusal a nack is, for the sender's code
	// (ReasonTooDeep; "" for any other). A peer that does not know it
	// ignores it.
	Reason string `json:"reason,omitempty"`
	// RetryAfter is, on a nack with ReasonBusy, when to make the call
	// again, in whole seconds.
	RetryAfter int `json:"retry_after,omitempty"`
}

// Frame types.
const (
	frameHello     = "hello"
	frameChallenge = "challenge"
	frameProof     = "proof"
	frameWelcome   = "welcome"
	frameError     = "error"
	frameAck       = "ack"
	frameNack      = "nack"
	// frameGoodbye: the sender drains the link for a stop. It wrote every
	// acknowledgement it owed before it and takes no envelope after it, so
	// the receiver stops waiting for acknowledgements on the link (what is
	// unacknowledged is sent again on the next link).
	frameGoodbye = "goodbye"
)
