package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Errors of the LLM layer. A provider's non-2xx answer is a *StatusError
// wrapping one of the first five; a 2xx answer that is not the provider's
// protocol is a *ReplyError wrapping ErrMalformed; a failed Router.Chat is a
// *CallError wrapping the last attempt's error.
var (
	// ErrRateLimited is an HTTP 429 from a provider.
	ErrRateLimited = errors.New("rate limited")
	// ErrQuota is an HTTP 429 that says the account is out of credit or
	// past its spending limit (OpenAI's insufficient_quota): waiting does
	// not help, so it is not retried on that backend.
	ErrQuota = errors.New("quota exhausted")
	// ErrServer is an HTTP 5xx from a provider (or an error it reported in
	// the middle of a stream).
	ErrServer = errors.New("provider server error")
	// ErrAuth is an HTTP 401 or 403: the key is missing or wrong.
	ErrAuth = errors.New("authentication failed")
	// ErrRequest is any other HTTP 4xx: the request itself is wrong.
	ErrRequest = errors.New("request rejected")
	// ErrMalformed is a reply that does not decode as the provider's protocol.
	ErrMalformed = errors.New("malformed reply")
	// ErrInvalidRequest is a request refused before it is sent (see
	// Request.Validate); it is never retried.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrNoBackend means no configured backend serves the model.
	ErrNoBackend = errors.New("no backend serves the model")
	// ErrTooLarge means a request needs more tokens than a backend's bucket
	// holds (rate_limit_tpm); waiting would never help.
	ErrTooLarge = errors.New("request larger than the backend's token bucket")
	// ErrAllFailed means every attempt failed.
	ErrAllFailed = errors.New("all backends failed")
	// ErrBudget means a token budget is exhausted (on_exceed: stop).
	ErrBudget = errors.New("token budget exhausted")
	// ErrRetryTooLate means the wait before the next attempt (a backend's
	// Retry-After, or the backoff) would end past the call's deadline:
	// the call fails at once instead of waiting for nothing.
	ErrRetryTooLate = errors.New("retry wait ends past the call's deadline")
	// ErrTurnHalted is the error an agent's turn that halted (max_iterations,
	// the progress guard, a failed model call, …) ends with when its caller
	// is not the organism's own user (Agent.Foreign, a listener): the call
	// failed, and why is in the log and the agent's history only.
	ErrTurnHalted = errors.New("it halted")
)

// excerptBytes is how much of an unexpected body an error quotes.
const excerptBytes = 200

// StatusError is a provider's non-2xx HTTP answer.
type StatusError struct {
	// Backend names the backend, Status is the HTTP status code.
	Backend string
	Status  int
	// RetryAfter is the Retry-After delay of a 429 or 503 (0: none given).
	RetryAfter time.Duration
	// ContentType is the answer's Content-Type.
	ContentType string
	// Body is the provider's error message when the body is a JSON error
	// the provider's way, else the start of the body (sanitised, at most
	// about 200 bytes).
	Body string
	kind error
}

// Error describes the answer: status, kind and the message (the backend is
// named by whoever wraps it: the Router's CallError).
func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d (%v)", e.Status, e.kind)
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// Unwrap returns the error's kind (ErrRateLimited, ErrQuota, ErrServer,
// ErrAuth or ErrRequest).
func (e *StatusError) Unwrap() error { return e.kind }

// ReplyError is a 2xx reply that is not the provider's protocol: an HTML
// page from a proxy, a stream cut short, text where JSON belongs. It says
// what the reply was: status, content type and its first bytes.
type ReplyError struct {
	// Status and ContentType are the reply's.
	Status      int
	ContentType string
	// Reason says what is wrong ("not JSON: …", "stream ended before
	// [DONE]").
	Reason string
	// Start is the start of the body, sanitised (at most about 200 bytes).
	Start string
}

// Error describes the reply.
func (e *ReplyError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no content type"
	}
	s := fmt.Sprintf("%v: %s (HTTP %d, %s", ErrMalformed, e.Reason, e.Status, ct)
	if e.Start == "" {
		return s + ", empty body)"
	}
	return s + fmt.Sprintf(", body starts %q)", e.Start)
}

// Unwrap returns ErrMalformed.
func (e *ReplyError) Unwrap() error { return ErrMalformed }

// streamError is an error a provider reported inside a 2xx reply (an SSE
// error event, an NDJSON {"error":…}, an OpenAI-style error object).
type streamError struct {
	msg  string
	kind error
}

func (e *streamError) Error() string { return fmt.Sprintf("%v: %s", e.kind, e.msg) }
func (e *streamError) Unwrap() error { return e.kind }

// reportedError returns the error a provider reported as typ (its error
// type, may be "") and msg, classified like an HTTP status would be.
func reportedError(typ, msg string) error {
	kind := ErrServer
	switch t := strings.ToLower(typ); {
	case t == quotaType:
		kind = ErrQuota
	case strings.Contains(t, "rate_limit"):
		kind = ErrRateLimited
	case strings.Contains(t, "authentication") || strings.Contains(t, "permission"):
		kind = ErrAuth
	case strings.Contains(t, "invalid_request") || t == "not_found_error":
		kind = ErrRequest
	}
	m := excerpt([]byte(msg), excerptBytes)
	if typ != "" {
		m = excerpt([]byte(typ), 64) + ": " + m
	}
	return &streamError{msg: m, kind: kind}
}

// CallError is a failed Router.Chat: the model asked for, the backend of
// the last attempt, how many attempts were made and the last one's error.
// It names the model and the backend once; the errors it wraps do not.
type CallError struct {
	// Model is the model asked for (the backend's default when the request
	// named none).
	Model string
	// Backend names the backend of the last attempt.
	Backend string
	// Attempts is how many attempts were made.
	Attempts int
	// Others are the last errors of the other backends tried, by name.
	Others []BackendError
	// Err is the last attempt's error (a *StatusError, *ReplyError, a
	// transport or context error, …).
	Err error
	// exhausted is set when the retries ran out (the error is ErrAllFailed).
	exhausted bool
}

// BackendError is the last error of one backend in a failed Router.Chat.
type BackendError struct {
	// Backend names the backend.
	Backend string
	// Err is its last attempt's error.
	Err error
}

// Error says which model failed on which backend, and why.
func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model %q on backend %s: %v", e.Model, e.Backend, e.Err)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (%d attempts)", e.Attempts)
	}
	for _, o := range e.Others {
		fmt.Fprintf(&b, "; backend %s: %v", o.Backend, o.Err)
	}
	return b.String()
}

// Unwrap returns the last attempt's error, and ErrAllFailed when the
// retries ran out.
func (e *CallError) Unwrap() []error {
	if e.exhausted {
		return []error{ErrAllFailed, e.Err}
	}
	return []error{e.Err}
}

// retryable reports whether another attempt may succeed.
func retryable(err error) bool {
	return !errors.Is(err, ErrAuth) && !errors.Is(err, ErrRequest) && !errors.Is(err, ErrQuota) &&
		!errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrNoBackend) && !errors.Is(err, ErrInvalidRequest)
}

// excerpt returns the start of b (at most n bytes, cut on a rune boundary)
// as one printable line: invalid UTF-8 becomes U+FFFD, control characters
// and runs of white space a single space; "…" marks a cut.
func excerpt(b []byte, n int) string {
	cut := false
	if len(b) > n {
		b, cut = b[:n], true
		i := len(b) - 1
		for i > 0 && !utf8.RuneStart(b[i]) {
			i--
		}
		if !utf8.FullRune(b[i:]) {
			b = b[:i]
		}
	}
	var s strings.Builder
	space := false
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space && s.Len() > 0 {
			s.WriteByte(' ')
		}
		space = false
		s.WriteRune(r)
	}
	if cut {
		s.WriteString("…")
	}
	return s.String()
}
