package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestAnthropicErrorShapes: the Messages API's errors as its documentation
// gives them (docs.anthropic.com/en/api/errors: {"type":"error","error":
// {"type","message"},"request_id"}; 529 overloaded_error; 400
// invalid_request_error; an error object in a 200 and an error event in a
// stream), each reported as what it is, with the provider's message.
func TestAnthropicErrorShapes(t *testing.T) {
	body := func(status int, typ, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg +
				`"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`))
		}
	}
	tests := []struct {
		name   string
		reply  http.HandlerFunc
		stream bool
		want   error
		says   string
	}{
		{"529 overloaded", body(529, "overloaded_error", "Overloaded"), false, ErrServer,
			"HTTP 529 (provider server error): overloaded_error: Overloaded"},
		{"400 invalid request", body(400, "invalid_request_error",
			"messages.1: all messages must have non-empty content except for the optional final assistant message"), false,
			ErrRequest, "HTTP 400 (request rejected): invalid_request_error: messages.1: all messages must have non-empty content"},
		{"413 too large", body(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."), false,
			ErrRequest, "HTTP 413 (request rejected): request_too_large: Request exceeds"},
		{"error in a 200", body(200, "overloaded_error", "Overloaded"), false, ErrServer, "overloaded_error: Overloaded"},
		{"error event mid-stream", serveFile(t, "anthropic/stream_overloaded.sse", "text/event-stream"), true, ErrServer,
			"overloaded_error: Overloaded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Messages: testMessages}
			if tc.stream {
				req.OnDelta = func(Delta) {}
			}
			_, err := backendFor(t, config.Anthropic, "b", newFake(t, tc.reply)).do(context.Background(), req)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}
