package aeiou

import (
	"errors"
	"fmt"
)

// Sentinel errors of canonical JSON (jcs.go). Every error ParseJSON,
// Canonicalize and MarshalCanonical return is a *JSONError wrapping exactly
// one of them.
var (
	// ErrJSONSyntax is input that is not JSON (RFC 8259).
	ErrJSONSyntax = errors.New("aeiou: invalid JSON")
	// ErrFloat is a number with a fraction or an exponent: AEIOU v3 payloads
	// carry integers only (§6.3), even when the value is integral ("1.0",
	// "1e3").
	ErrFloat = errors.New("aeiou: floating-point numbers are not allowed")
	// ErrIntegerRange is an integer outside ±(2^53−1), the range every
	// I-JSON implementation represents exactly.
	ErrIntegerRange = errors.New("aeiou: integer out of range ±(2^53-1)")
	// ErrDuplicateKey is an object with the same key twice (after escapes
	// are decoded: "a" and "\u0061" are the same key).
	ErrDuplicateKey = errors.New("aeiou: duplicate object key")
	// ErrInvalidString is a string that is not well-formed Unicode: invalid
	// UTF-8 or a lone surrogate escape.
	ErrInvalidString = errors.New("aeiou: string is not well-formed Unicode")
	// ErrTooDeep is nesting deeper than MaxJSONDepth.
	ErrTooDeep = errors.New("aeiou: JSON nested too deeply")
	// ErrUnsupportedType is a Go value MarshalCanonical cannot represent.
	ErrUnsupportedType = errors.New("aeiou: value type has no canonical JSON form")
)

// JSONError is a canonical-JSON failure: what (Err, one of the sentinels
// above), where (Offset, a byte offset in the input, -1 for a Go value) and
// a detail.
type JSONError struct {
	Offset int
	Detail string
	Err    error
}

// Error implements error.
func (e *JSONError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%v: %s", e.Err, e.Detail)
	}
	return fmt.Sprintf("%v at offset %d: %s", e.Err, e.Offset, e.Detail)
}

// Unwrap returns the sentinel.
func (e *JSONError) Unwrap() error { return e.Err }

// Sentinel errors of keys, minting and the magic tool.
var (
	// ErrKey is unusable key material: a key of the wrong size, an HMAC
	// secret shorter than 32 bytes, a malformed or duplicate kid.
	ErrKey = errors.New("aeiou: bad key")
	// ErrBadRequest is a magic-tool call the model got wrong: an unknown
	// kind, a missing or unknown action, a payload that is not an object
	// or holds floats. The model can correct it and call again.
	ErrBadRequest = errors.New("aeiou: bad magic-tool request")
	// ErrTokenTooLarge is a token that would exceed MaxTokenBytes (the
	// request and telemetry objects are too big).
	ErrTokenTooLarge = errors.New("aeiou: token exceeds 1024 bytes")
	// ErrSigner is a signer that failed (a key service unavailable).
	ErrSigner = errors.New("aeiou: signer failed")
	// ErrMagicInternal is the §11.4 failure: the primary and the fallback
	// signer both failed. The host halts with ERR_MAGIC_TOOL_INTERNAL and
	// never injects a token itself.
	ErrMagicInternal = errors.New("aeiou: ERR_MAGIC_TOOL_INTERNAL: primary and fallback signers failed")
	// ErrTurn is a malformed turn (empty or oversized session id, negative
	// index, a nonce that is not base64url of 128 bits).
	ErrTurn = errors.New("aeiou: bad turn")
	// ErrConfig is an invalid Config.
	ErrConfig = errors.New("aeiou: bad configuration")
)

// MintError is the §11.4 failure of the magic tool: both signers failed.
// It wraps ErrMagicInternal; Primary and Fallback are the two causes.
type MintError struct {
	Primary, Fallback error
}

// Error implements error.
func (e *MintError) Error() string {
	return fmt.Sprintf("%v (primary: %v; fallback: %v)", ErrMagicInternal, e.Primary, e.Fallback)
}

// Unwrap returns ErrMagicInternal and both causes.
func (e *MintError) Unwrap() []error {
	return []error{ErrMagicInternal, e.Primary, e.Fallback}
}

// ErrInvalidToken is wrapped by every *VerifyError.
var ErrInvalidToken = errors.New("aeiou: invalid control token")

// VerifyError is a token that did not verify, and why. Reason is one of the
// Reason constants (a bounded set, fit for a metric label).
type VerifyError struct {
	Reason Reason
	Err    error
}

// Error implements error.
func (e *VerifyError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: %s: %v", ErrInvalidToken, e.Reason, e.Err)
	}
	return fmt.Sprintf("%v: %s", ErrInvalidToken, e.Reason)
}

// Unwrap returns ErrInvalidToken and the cause, if any.
func (e *VerifyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidToken, e.Err}
	}
	return []error{ErrInvalidToken}
}

func verifyErr(r Reason, format string, args ...any) *VerifyError {
	if format == "" {
		return &VerifyError{Reason: r}
	}
	return &VerifyError{Reason: r, Err: fmt.Errorf(format, args...)}
}

// Sentinel errors of envelopes (§3). Every error ParseEnvelope and
// BuildEnvelope return is an *EnvelopeError wrapping one of them; all are
// fatal for the envelope (§3.4).
var (
	// ErrEnvelopeTooLarge is an envelope over MaxEnvelopeBytes (1 MiB).
	ErrEnvelopeTooLarge = errors.New("aeiou: envelope exceeds 1 MiB")
	// ErrSectionTooLarge is a section body over MaxSectionBytes (512 KiB).
	ErrSectionTooLarge = errors.New("aeiou: section exceeds 512 KiB")
	// ErrLineTooLong is an OUTPUT line over MaxOutputLineBytes (8192 B).
	ErrLineTooLong = errors.New("aeiou: output line exceeds 8192 bytes")
	// ErrNotUTF8 is an envelope that is not valid UTF-8.
	ErrNotUTF8 = errors.New("aeiou: envelope is not valid UTF-8")
	// ErrEnvelopeSyntax is an envelope whose markers are wrong: no START
	// first, no END last, text between START and the first section, a
	// second START, data after END.
	ErrEnvelopeSyntax = errors.New("aeiou: malformed envelope")
	// ErrMissingSection is an envelope without USERDATA or ACTIONS.
	ErrMissingSection = errors.New("aeiou: required section missing")
	// ErrSectionOrder is a section out of the fixed order USERDATA,
	// SCRATCHPAD, OUTPUT, ACTIONS.
	ErrSectionOrder = errors.New("aeiou: section out of order")
	// ErrUserData is a USERDATA body that is not the §3.5 JSON object.
	ErrUserData = errors.New("aeiou: invalid USERDATA")
	// ErrActions is an ACTIONS body that is not exactly one
	// command … endcommand block.
	ErrActions = errors.New("aeiou: invalid ACTIONS")
	// ErrMarkerInBody is a body holding a line that is an envelope marker;
	// BuildEnvelope refuses it (it would split the envelope).
	ErrMarkerInBody = errors.New("aeiou: section body contains an envelope marker line")
)

// EnvelopeError is an envelope failure: the sentinel, the section it
// concerns (empty for the whole envelope), and the 1-based line (0 when it
// concerns no line).
type EnvelopeError struct {
	Section string
	Line    int
	Detail  string
	Err     error
}

// Error implements error.
func (e *EnvelopeError) Error() string {
	s := e.Err.Error()
	if e.Section != "" {
		s += " in " + e.Section
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d", e.Line)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel.
func (e *EnvelopeError) Unwrap() error { return e.Err }
