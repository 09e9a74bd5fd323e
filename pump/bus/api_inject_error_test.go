package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
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

// TestSendErrorNotJournaled: a /ws send the journal could not record is
// answered as the REST inject is, not with "Internal error".
func TestSendErrorNotJournaled(t *testing.T) {
	cause := fmt.Errorf("%w: journal seq 6: store: commit: database or disk is full (13)", store.ErrWriteFailed)
	h := wire.Head{Type: wire.TypeSend, ID: json.RawMessage(`7`)}
	head := wire.Head{Type: wire.TypeError, ID: json.RawMessage(`7`)}
	tests := []struct {
		name string
		err  error
		want wire.Error
		sent bool
	}{
		{"not journaled", fmt.Errorf("%w: %w", pump.ErrNotDurable, cause),
			wire.Error{Head: head, Error: notJournaledText, Code: wire.CodeUnavailable}, true},
		{"closed", pump.ErrClosed, wire.Error{Head: head, Error: "Pipeline not available", Code: wire.CodeUnavailable}, true},
		{"socket closing", context.Canceled, wire.Error{}, false},
		{"anything else", errors.New("boom"), wire.Error{Head: head, Error: "Internal error", Code: wire.CodeInternal}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sent := wsInjectError(h, tt.err)
			if d := cmp.Diff(tt.want, got); d != "" || sent != tt.sent {
				t.Errorf("wsInjectError(%v) = sent %v (-want +got):\n%s", tt.err, sent, d)
			}
		})
	}
}
