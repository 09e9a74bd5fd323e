package stage

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
	"github.com/xml-pipeline/xmlpipe/schemas"
)

// MaxRefBytes caps a correlation ref (xmlpipe.SendResponse.Ref).
const MaxRefBytes = 256

// ErrBadRef reports a correlation ref the pump cannot carry.
var ErrBadRef = errors.New("invalid correlation ref")

// CheckRef reports why ref cannot be a correlation ref: longer than
// MaxRefBytes, not UTF-8, or holding a control character or one XML cannot
// carry. "" is no ref and valid.
func CheckRef(ref string) error {
	switch {
	case len(ref) > MaxRefBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadRef, len(ref), MaxRefBytes)
	case !utf8.ValidString(ref):
		return fmt.Errorf("%w: not UTF-8", ErrBadRef)
	}
	for _, r := range ref {
		if r < 0x20 || !xmltext.IsChar(r) {
			return fmt.Errorf("%w: character %U", ErrBadRef, r)
		}
	}
	return nil
}

// inReplyToName is the <meta> element that carries, in an envelope the pump
// built, the correlation ref of the message it answers.
const inReplyToName = "in-reply-to"

// AppendEnvelopeInReplyTo is AppendEnvelope for an answer to a message sent
// with a correlation ref: <meta> carries the ref in
// <in-reply-to xmlns="https://xml-pipeline.org/ns/core/v1">, after <thread>
// (an extension element the envelope schema allows), so that the answer
// keeps its correlation in the journal and through a restart. Only the pump
// builds such envelopes; it ignores the element on messages from outside.
// An empty inReplyTo is AppendEnvelope. The output is exclusive C14N when
// the payload's encoding is.
func AppendEnvelopeInReplyTo(dst []byte, from, to, thread, inReplyTo string, payload []byte) []byte {
	if inReplyTo == "" {
		return AppendEnvelope(dst, from, to, thread, payload)
	}
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
	dst = append(dst, "</thread><"+inReplyToName+` xmlns="`+schemas.CoreNS+`">`...)
	dst = xmltext.AppendText(dst, inReplyTo)
	dst = append(dst, "</"+inReplyToName+"></meta>"...)
	dst = append(dst, payload...)
	return append(dst, "</message>"...)
}
