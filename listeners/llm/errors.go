package llm

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the LLM layer. Provider failures are *StatusError values that wrap
// one of the first four.
var (
	// ErrRateLimited is an HTTP 429 from a provider.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer is an HTTP 5xx from a provider.
	ErrServer = errors.New("provider server error")
	// ErrAuth is an HTTP 401 or 403: the key is missing or wrong.
	ErrAuth = errors.New("authentication failed")
	// ErrRequest is any other HTTP 4xx: the request itself is wrong.
	ErrRequest = errors.New("request rejected")
	// ErrMalformed is a reply that does not decode as the provider's protocol.
	ErrMalformed = errors.New("malformed reply")
	// ErrNoBackend means no configured backend serves the model.
	ErrNoBackend = errors.New("no backend serves the model")
	// ErrTooLarge means a request needs more tokens than a backend's bucket
	// holds (rate_limit_tpm); waiting would never help.
	ErrTooLarge = errors.New("request larger than the backend's token bucket")
	// ErrAllFailed means every attempt failed.
	ErrAllFailed = errors.New("all backends failed")
	// ErrBudget means a token budget is exhausted (on_exceed: stop).
	ErrBudget = errors.New("token budget exhausted")
)

// StatusError is a provider's non-2xx HTTP answer.
type StatusError struct {
	// Backend names the backend, Status is the HTTP status code.
	Backend string
	Status  int
	// RetryAfter is the Retry-After delay of a 429 or 503 (0: none given).
	RetryAfter time.Duration
	// Body is the start of the response body.
	Body string
	kind error
}

// Error describes the answer: backend, status, kind and the start of the body.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %v: %s", e.Backend, e.Status, e.kind, e.Body)
}

// Unwrap returns the error's kind (ErrRateLimited, ErrServer, ErrAuth or
// ErrRequest).
func (e *StatusError) Unwrap() error { return e.kind }

// retryable reports whether another attempt may succeed.
func retryable(err error) bool {
	return !errors.Is(err, ErrAuth) && !errors.Is(err, ErrRequest) && !errors.Is(err, ErrTooLarge) &&
		!errors.Is(err, ErrNoBackend)
}
