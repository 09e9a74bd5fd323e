package stage

import (
	"fmt"
	"sync"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// MaxOriginalAttempt caps the bytes of the failed message a <huh> carries.
const MaxOriginalAttempt = 4096

// RoutingErrorMessage is the SystemError text of a peer violation (seed 001).
const RoutingErrorMessage = "Message could not be delivered. Please verify your target and try again."

// NewHuh builds a <huh> with the canned text for err (failure.CannedText)
// and (a prefix of, at most MaxOriginalAttempt bytes) the original bytes.
func NewHuh(err error, original []byte) *xmlpipe.Huh {
	if len(original) > MaxOriginalAttempt {
		original = original[:MaxOriginalAttempt]
	}
	return &xmlpipe.Huh{Error: failure.CannedText(err), OriginalAttempt: append([]byte(nil), original...)}
}

// RoutingError is the SystemError of a peer violation.
func RoutingError() *xmlpipe.SystemError {
	return &xmlpipe.SystemError{Code: "routing", Message: RoutingErrorMessage, RetryAllowed: true}
}

// TooManyMessagesError is the SystemError for raw output holding more
// messages than its producer may send in one turn (count of them, limit
// allowed): none of them was sent, and the text says the limit so an agent
// can split its work.
func TooManyMessagesError(count, limit int) *xmlpipe.SystemError {
	return &xmlpipe.SystemError{Code: "validation", RetryAllowed: true, Message: fmt.Sprintf(
		"Too many messages in one reply: %d, but at most %d may be sent per turn. None of them was sent; send at most %d at a time.",
		count, limit, limit)}
}

// CoreTypes holds the payload types of the core vocabulary.
type CoreTypes struct {
	Huh         *xmlpipe.PayloadType
	SystemError *xmlpipe.PayloadType
	// Refusal is the structured refusal's type (schemas/refusal.xsd).
	Refusal *xmlpipe.PayloadType
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
		h, err := xmlpipe.PayloadTypeOf[xmlpipe.Huh](xmlpipe.WithSchema(schemas.Core()))
		if err != nil {
			coreErr = fmt.Errorf("xmlpipe: core schema: %w", err)
			return
		}
		s, err := xmlpipe.PayloadTypeOf[xmlpipe.SystemError](xmlpipe.WithSchema(schemas.SystemError()))
		if err != nil {
			coreErr = fmt.Errorf("xmlpipe: system-error schema: %w", err)
			return
		}
		r, err := xmlpipe.PayloadTypeOf[xmlpipe.Refusal](xmlpipe.WithSchema(schemas.Refusal()))
		if err != nil {
			coreErr = fmt.Errorf("xmlpipe: refusal schema: %w", err)
			return
		}
		coreTypes = CoreTypes{Huh: h, SystemError: s, Refusal: r}
	})
	return coreTypes, coreErr
}
