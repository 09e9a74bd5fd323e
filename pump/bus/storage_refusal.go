package bus

import (
	"errors"
	"math"
	"net/http"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// storageRefusalOf reports whether err is the pump's refusal of a new
// message while the organism's storage cannot commit (pump.ErrCannotJournal:
// a full disk) and, if so, the answer's text ("The organism cannot journal
// messages now (disk full: …); nothing was done; retry later") and its
// retry hint in whole seconds (at least 1). REST and stream answer it 503
// with Retry-After, /ws with an unavailable error frame, /bus with a <huh>.
func storageRefusalOf(err error) (text string, retryAfter int, ok bool) {
	if !errors.Is(err, pump.ErrCannotJournal) {
		return "", 0, false
	}
	text, retryAfter = "The organism cannot journal messages now; nothing was done; retry later", 1
	if r, isRefusal := errors.AsType[*pump.StorageRefusal](err); isRefusal {
		t := r.Text()
		text = strings.ToUpper(t[:1]) + t[1:]
		retryAfter = max(1, int(math.Ceil(r.RetryAfter.Seconds())))
	}
	return text, retryAfter, true
}

// refusalAPIError is the REST answer to a message refused before the
// organism took it: 503 while its storage cannot commit, 429 when it is
// busy, each with its text and Retry-After; nil for any other error.
func refusalAPIError(err error) *apiError {
	if text, retry, ok := storageRefusalOf(err); ok {
		return &apiError{status: http.StatusServiceUnavailable, retryAfter: retry,
			body: errorBody{Error: text, RetryAfter: retry}}
	}
	if text, retry, ok := busyOf(err); ok {
		return busyAPIError(text, retry)
	}
	return nil
}
