package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestInjectErrorNotJournaled: a message the journal could not record (a
// full disk) is answered 503 with a text saying so, not 500 "Internal
// error", which left the client no clue whether to send it again.
func TestInjectErrorNotJournaled(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	cause := fmt.Errorf("%w: journal seq 6: store: commit: database or disk is full (13)", store.ErrWriteFailed)
	tests := []struct {
		name string
		err  error
		want *apiError
	}{
		{"not journaled", fmt.Errorf("%w: %w", pump.ErrNotDurable, cause),
			&apiError{status: http.StatusServiceUnavailable, body: errorBody{Error: notJournaledText}}},
		{"closed", pump.ErrClosed,
			&apiError{status: http.StatusServiceUnavailable, body: errorBody{Error: "Pipeline not available"}}},
		{"anything else", errors.New("boom"), internalAPIError()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.injectError(tt.err)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(apiError{})); d != "" {
				t.Errorf("injectError(%v) (-want +got):\n%s", tt.err, d)
			}
		})
	}
}
