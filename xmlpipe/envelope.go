package xmlpipe

import (
	"strings"

	"github.com/xml-pipeline/xmlpipe/schemas"
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
	// Repaired reports whether the repair path was taken.
	Repaired bool
	// Diagnostics lists repairs and notes (e.g. a replaced thread id).
	Diagnostics []Diagnostic
}

// AppendEnvelope appends a complete envelope around an already encoded payload
// element. from, to and thread are escaped; to may be empty. The payload must be
// a single well-formed element that declares its own namespace (xmlns="" for no
// namespace) — the codec's Append with emptyNS does that.
func AppendEnvelope(dst []byte, from, to, thread string, payload []byte) []byte {
	dst = append(dst, `<message xmlns="`+EnvelopeNS+`"><meta><from>`...)
	dst = appendEscaped(dst, from)
	dst = append(dst, "</from>"...)
	if to != "" {
		dst = append(dst, "<to>"...)
		dst = appendEscaped(dst, to)
		dst = append(dst, "</to>"...)
	}
	dst = append(dst, "<thread>"...)
	dst = appendEscaped(dst, thread)
	dst = append(dst, "</thread></meta>"...)
	dst = append(dst, payload...)
	return append(dst, "</message>"...)
}

// appendEscaped appends s as XML character data, escaping markup and line
// breaks and replacing characters XML cannot carry with U+FFFD.
func appendEscaped(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, "&<>\"'\r\t\n") && validXMLString(s) {
		return append(dst, s...)
	}
	for _, r := range s {
		switch r {
		case '&':
			dst = append(dst, "&amp;"...)
		case '<':
			dst = append(dst, "&lt;"...)
		case '>':
			dst = append(dst, "&gt;"...)
		case '"':
			dst = append(dst, "&quot;"...)
		case '\'':
			dst = append(dst, "&apos;"...)
		case '\r':
			dst = append(dst, "&#xD;"...)
		default:
			if !isXMLChar(r) {
				r = '\uFFFD'
			}
			dst = append(dst, string(r)...)
		}
	}
	return dst
}

func validXMLString(s string) bool {
	for _, r := range s {
		if !isXMLChar(r) || r == '\uFFFD' {
			return false
		}
	}
	return true
}
