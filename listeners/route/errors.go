package route

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the routing pipeline.
var (
	// ErrNoCapability is the refusal of seed 000 §10.3: no capability the
	// caller may use matches the need. Every candidate was masked out, or
	// none matched at all — the two read the same, so a caller cannot learn
	// that a capability outside its mask exists (§4.3: a missing route is an
	// impossibility, not a denial). The error is a *RefusalError.
	ErrNoCapability = errors.New("no matching capability in your profile")
	// ErrEmbedding: the embedding provider failed or answered something
	// unusable (wrong count, mixed dimensions, not a number).
	ErrEmbedding = errors.New("embedding failed")
	// ErrFill: the form filler could not build a valid payload for the
	// selected capability (the error is a *FillError).
	ErrFill = errors.New("cannot fill the payload")
	// ErrNoDispatcher: Route was called on a router without a Dispatcher.
	ErrNoDispatcher = errors.New("no dispatcher: the router can rank and fill but not send")
	// ErrEmptyNeed: the need is empty or blank.
	ErrEmptyNeed = errors.New("describe what you need")
	// ErrNeedTooLong: the need is longer than MaxNeedBytes.
	ErrNeedTooLong = errors.New("the need is too long: describe it in a few sentences")
)

// RefusalError is the structured refusal "no matching capability in your
// profile": a real denial, not a misread (seed 000 §10.3).
type RefusalError struct {
	// Need is the need that found nothing the caller may use.
	Need string
}

// Error returns the refusal's fixed text.
func (e *RefusalError) Error() string { return ErrNoCapability.Error() }

// Unwrap returns ErrNoCapability.
func (e *RefusalError) Unwrap() error { return ErrNoCapability }

// Attempt is one try of the form filler: a model of the ladder, or the
// extractive filler.
type Attempt struct {
	// By names the filler: a model name, or "extractive".
	By string
	// Err is why the attempt failed (nil: it produced the payload).
	Err error
}

// FillError reports that no attempt produced a valid payload.
type FillError struct {
	// Capability is the selected capability.
	Capability string
	// Attempts are the tries, in order.
	Attempts []Attempt
}

// Error names the capability and every attempt's failure.
func (e *FillError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v for %s", ErrFill, e.Capability)
	for i, a := range e.Attempts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", a.By, a.Err)
	}
	return b.String()
}

// Unwrap returns ErrFill.
func (e *FillError) Unwrap() error { return ErrFill }
