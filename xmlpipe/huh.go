package xmlpipe

import (
	"encoding/xml"
	"fmt"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"sync"

	"github.com/xml-pipeline/xmlpipe/schemas"
)

// MaxOriginalAttempt caps the bytes of the failed message a <huh> carries.
const MaxOriginalAttempt = 4096

// Huh is the core error payload (seed 001): canned text plus the base64 of the
// bytes that failed. It travels as
// <huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>…</error><original-attempt>…</original-attempt></huh>.
type Huh struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/core/v1 huh"`
	// Error is one of the canned, generic texts (never raw validator output).
	Error string `xml:"error"`
	// OriginalAttempt holds the raw bytes that failed, truncated to
	// MaxOriginalAttempt bytes.
	OriginalAttempt []byte `xml:"original-attempt,omitempty"`
}

// NewHuh builds a <huh> with the canned text for err and (a prefix of) the
// original bytes.
func NewHuh(err error, original []byte) *Huh {
	if len(original) > MaxOriginalAttempt {
		original = original[:MaxOriginalAttempt]
	}
	return &Huh{Error: failure.CannedText(err), OriginalAttempt: append([]byte(nil), original...)}
}

// SystemError is the routing/delivery failure payload (seed 001). It travels in
// no namespace: <SystemError><code>routing</code><message>…</message><retry-allowed>true</retry-allowed></SystemError>.
type SystemError struct {
	XMLName xml.Name `xml:"SystemError"`
	// Code is the category: routing, validation or timeout.
	Code string `xml:"code"`
	// Message is a generic, non-revealing description.
	Message string `xml:"message"`
	// RetryAllowed tells the agent whether it may retry.
	RetryAllowed bool `xml:"retry-allowed"`
}

// RoutingError is the SystemError of a peer violation.
func RoutingError() *SystemError {
	return &SystemError{Code: "routing", Message: RoutingErrorMessage, RetryAllowed: true}
}

// TooManyMessagesError is the SystemError for raw output holding more
// messages than its producer may send in one turn (count of them, limit
// allowed): none of them was sent, and the text says the limit so an agent
// can split its work.
func TooManyMessagesError(count, limit int) *SystemError {
	return &SystemError{Code: "validation", RetryAllowed: true, Message: fmt.Sprintf(
		"Too many messages in one reply: %d, but at most %d may be sent per turn. None of them was sent; send at most %d at a time.",
		count, limit, limit)}
}

// CoreTypes holds the payload types of the core vocabulary.
type CoreTypes struct {
	Huh         *PayloadType
	SystemError *PayloadType
	// Refusal is the structured refusal's type (schemas/refusal.xsd).
	Refusal *PayloadType
}

var (
	coreOnce  sync.Once
	coreTypes CoreTypes
	coreErr   error
)

// Core returns the compiled payload types of <huh>, SystemError and
// <refusal>.
func Core() (CoreTypes, error) {
	coreOnce.Do(func() {
		h, err := PayloadTypeOf[Huh](WithSchema(schemas.Core()))
		if err != nil {
			coreErr = fmt.Errorf("xmlpipe: core schema: %w", err)
			return
		}
		s, err := PayloadTypeOf[SystemError](WithSchema(schemas.SystemError()))
		if err != nil {
			coreErr = fmt.Errorf("xmlpipe: system-error schema: %w", err)
			return
		}
		r, err := PayloadTypeOf[Refusal](WithSchema(schemas.Refusal()))
		if err != nil {
			coreErr = fmt.Errorf("xmlpipe: refusal schema: %w", err)
			return
		}
		coreTypes = CoreTypes{Huh: h, SystemError: s, Refusal: r}
	})
	return coreTypes, coreErr
}
