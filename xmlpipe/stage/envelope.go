package stage

import (
	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// EnvelopeNS is the envelope namespace.
const EnvelopeNS = schemas.EnvelopeNS

// Envelope is what the ingress stages learn about one message.
type Envelope struct {
	// From, To and Thread are the <meta> values (whitespace-trimmed). To may be empty.
	From, To, Thread string
	// PayloadName and PayloadNS name the payload root element.
	PayloadName, PayloadNS string
	// Canonical is the exclusive C14N (no comments) of the whole envelope as
	// accepted (with the assigned thread id): the bytes journaled and signed.
	Canonical []byte
	// InReplyTo is the correlation ref an envelope built by the pump carries
	// in <meta> (AppendEnvelopeInReplyTo): the message answers the one sent
	// with that ref. Only the pump may set it; it ignores it on messages from
	// outside the organism.
	InReplyTo string
	// Repaired reports whether the repair path was taken.
	Repaired bool
	// Diagnostics lists repairs and notes (e.g. a replaced thread id).
	Diagnostics []failure.Diagnostic
}

// AppendEnvelope appends a complete envelope around an already encoded payload
// element. from, to and thread are escaped; to may be empty. The payload must be
// a single well-formed element that declares its own namespace (xmlns="" for no
// namespace) — the codec's Append with emptyNS does that.
func AppendEnvelope(dst []byte, from, to, thread string, payload []byte) []byte {
	dst = append(dst, `<message xmlns="`+EnvelopeNS+`"><meta><from>`...)
	dst = xmltext.AppendText(dst, from)
	dst = append(dst, "</from>"...)
	if to != "" {
		dst = append(dst, "<to>"...)
		dst = xmltext.AppendText(dst, to)
		dst = append(dst, "</to>"...)
	}
	dst = append(dst, "<thread>"...)
	dst = xmltext.AppendText(dst, thread)
	dst = append(dst, "</thread></meta>"...)
	dst = append(dst, payload...)
	return append(dst, "</message>"...)
}
