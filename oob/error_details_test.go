package oob

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestErrorResponseNamesDetails: the error an <error> response becomes
// (Response.Err, what `xmlpipe ctl` prints on stderr) carries the details
// the organism gave — which XSD facet a request broke, why a listener
// could not be registered — not only the code and the generic message.
func TestErrorResponseNamesDetails(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    ErrorResponse
		want string
	}{
		{"without details", ErrorResponse{Code: CodeNotFound, Message: "no listener nobody"},
			"oob: error response: NOT_FOUND: no listener nobody"},
		{"with details", ErrorResponse{Code: CodeMalformed, Message: "the request does not match privileged-msg.xsd",
			Details: "Element 'scope': The value 'bogus' is not an element of the set {'agents', 'all'}."},
			"oob: error response: MALFORMED_REQUEST: the request does not match privileged-msg.xsd: " +
				"Element 'scope': The value 'bogus' is not an element of the set {'agents', 'all'}."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			r := &Response{Payload: ResponsePayload{Error: &e}}
			err := r.Err()
			if !errors.Is(err, ErrResponse) {
				t.Fatalf("Err() = %v, want it to wrap ErrResponse", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Err() (-want +got):\n%s", diff)
			}
		})
	}
}
