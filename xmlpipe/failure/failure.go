// Package failure is the vocabulary of a message that failed: the Stage it
// failed at, the sentinel error every stage failure wraps, the Diagnostics
// that say what was wrong (for logs, the journal and the OOB channel) and the
// canned text its sender is told in a <huh>, which never reveals topology
// (seed 001). The stages (package xmlpipe/stage), the payload codec
// (xmlpipe.PayloadType) and the pump report every per-message failure as a
// *Failure.
package failure

import (
	"errors"
	"fmt"
	"strings"
)

// Stage names where a message can fail.
type Stage string

// The stages of one message, in order.
const (
	StageSize     Stage = "size"
	StageParse    Stage = "parse"
	StageRepair   Stage = "repair"
	StageC14N     Stage = "c14n"
	StageEnvelope Stage = "envelope"
	StageExtract  Stage = "extract"
	StageThread   Stage = "thread"
	StageRoute    Stage = "route"
	StagePayload  Stage = "payload"
	StageDecode   Stage = "decode"
	StageHandler  Stage = "handler"
	StageEncode   Stage = "encode"
	// StageInput is what a handler found wrong with the message it was
	// given (the text of its *xmlpipe.InputError), written for the sender:
	// a journaled <huh> holds it beside the handler's error (StageHandler),
	// which only the organism's operators read.
	StageInput Stage = "input"
)

// Sentinel errors: every stage failure wraps exactly one of them.
var (
	ErrEmpty            = errors.New("empty message")
	ErrTooLarge         = errors.New("message exceeds the size cap")
	ErrEncoding         = errors.New("message is not valid UTF-8")
	ErrDoctype          = errors.New("DOCTYPE is not allowed")
	ErrMalformed        = errors.New("message is not well-formed XML")
	ErrEnvelope         = errors.New("invalid envelope")
	ErrNoPayload        = errors.New("no payload element")
	ErrMultiplePayloads = errors.New("more than one payload element")
	ErrPayloadNamespace = errors.New("payload in the envelope namespace")
	ErrNoRoute          = errors.New("no listener for the message")
	ErrPayloadInvalid   = errors.New("payload does not match the listener schema")
	ErrDecode           = errors.New("payload could not be decoded")
	ErrHandler          = errors.New("handler failed")
	ErrEncode           = errors.New("payload could not be encoded")
	ErrForbiddenSender  = errors.New("sender not allowed")
	ErrPrivileged       = errors.New("privileged message on a regular channel")
	ErrTooManyPayloads  = errors.New("too many payload elements in one output")
	// ErrKilledConversation: the message continues a conversation that was
	// killed; a kill ends a conversation for good.
	ErrKilledConversation = errors.New("conversation was killed")
)

// Canned <huh> texts: brief, generic and deliberately identical for "wrong
// schema" and "no such capability", so errors never reveal topology (seed 001).
const (
	HuhMalformed  = "Malformed message"
	HuhEnvelope   = "Invalid envelope"
	HuhPayload    = "Invalid payload structure"
	HuhProcessing = "Message could not be processed"
	HuhTooLarge   = "Message too large"
	// HuhKilled answers a continuation of a killed conversation (its
	// sender owns it: the text reveals nothing the sender does not know).
	HuhKilled = "Conversation was killed; start a new one"
)

// Undelivered is the canned text of a dead letter — a message the pump
// could not deliver anywhere — for a client not told its reason, which may
// carry a handler's error.
const Undelivered = "Message could not be delivered"

// Diagnostic is one detailed finding about a message: a repair, a validation
// error, a replaced thread id. Diagnostics go to logs, the journal and the OOB
// channel, never into a <huh>.
type Diagnostic struct {
	Stage Stage
	Line  int
	Path  string
	Msg   string
}

// String renders "stage line path: msg", leaving out what is not set: a
// diagnostic of no stage, line or path (a pump decision such as
// "conversation killed") is its message alone.
func (d Diagnostic) String() string {
	var where []string
	if d.Stage != "" {
		where = append(where, string(d.Stage))
	}
	if d.Line > 0 {
		where = append(where, fmt.Sprintf("line %d", d.Line))
	}
	if d.Path != "" {
		where = append(where, d.Path)
	}
	if len(where) == 0 {
		return d.Msg
	}
	return strings.Join(where, " ") + ": " + d.Msg
}

// Failure is a per-message failure: data, not a crash. It carries the stage, the
// sentinel and the full diagnostics; Canned is what the sender is told.
type Failure struct {
	Stage       Stage
	Err         error
	Diagnostics []Diagnostic
}

// Error renders the failure with its first diagnostics.
func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %v", f.Stage, f.Err)
	for i, d := range f.Diagnostics {
		if i == 3 {
			fmt.Fprintf(&b, "; … %d more", len(f.Diagnostics)-3)
			break
		}
		b.WriteString("; ")
		if d.Line > 0 {
			fmt.Fprintf(&b, "line %d ", d.Line)
		}
		if d.Path != "" {
			b.WriteString(d.Path)
			b.WriteString(" ")
		}
		b.WriteString(d.Msg)
	}
	return b.String()
}

// Unwrap returns the sentinel.
func (f *Failure) Unwrap() error { return f.Err }

// Canned returns the generic text the sender's <huh> carries.
func (f *Failure) Canned() string { return CannedText(f.Err) }

// CannedText maps an error to the generic <huh> text.
func CannedText(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return HuhTooLarge
	case errors.Is(err, ErrEmpty), errors.Is(err, ErrEncoding), errors.Is(err, ErrDoctype), errors.Is(err, ErrMalformed):
		return HuhMalformed
	case errors.Is(err, ErrEnvelope), errors.Is(err, ErrNoPayload), errors.Is(err, ErrMultiplePayloads),
		errors.Is(err, ErrForbiddenSender):
		return HuhEnvelope
	case errors.Is(err, ErrNoRoute), errors.Is(err, ErrPayloadInvalid), errors.Is(err, ErrDecode),
		errors.Is(err, ErrPayloadNamespace):
		return HuhPayload
	case errors.Is(err, ErrKilledConversation):
		return HuhKilled
	default:
		return HuhProcessing
	}
}
