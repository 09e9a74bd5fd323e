package mcp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// initialize is the first request an MCP client sends.
const initialize = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`

// startingAnswer is what one request to a Starting got.
type startingAnswer struct {
	Status     int
	RetryAfter string
	Body       map[string]any
}

// askStarting posts initialize to srv and returns the answer.
func askStarting(t *testing.T, srv *httptest.Server) startingAnswer {
	t.Helper()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(initialize))
	if err != nil {
		t.Error(err)
		return startingAnswer{}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	a := startingAnswer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	if err := json.Unmarshal(data, &a.Body); err != nil {
		t.Errorf("answer %q is not JSON: %v", data, err)
	}
	return a
}

// A request that arrives before the bridge is ready is held, then served
// by it — not refused.
func TestStartingHoldsEarlyRequest(t *testing.T) {
	s := NewStarting(time.Minute)
	held := make(chan struct{}, 1)
	s.onHold = func() { held <- struct{}{} }
	srv := httptest.NewServer(s)
	defer srv.Close()
	got := make(chan startingAnswer, 1)
	go func() { got <- askStarting(t, srv) }()
	select {
	case <-held: // the request waits at the gate
	case <-time.After(time.Minute):
		t.Fatal("the request was never held")
	}
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{"echo":` + string(body) + `}}`))
	}))
	a := <-got
	if a.Status != http.StatusOK || a.Body["result"] == nil {
		t.Errorf("held request answered %+v, want the bridge's answer", a)
	}
	// Requests after Serve go straight to the bridge.
	if a := askStarting(t, srv); a.Status != http.StatusOK {
		t.Errorf("request after Serve answered %+v", a)
	}
}

// A request the organism never got ready for, or failed to start for, is
// answered with a JSON-RPC error echoing its id.
func TestStartingNotReady(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *Starting)
		want  startingAnswer
	}{
		{"the hold ran out", func(*Starting) {}, startingAnswer{Status: http.StatusServiceUnavailable, RetryAfter: "5",
			Body: map[string]any{"jsonrpc": "2.0", "id": 7.0, "error": map[string]any{"code": -32000.0,
				"message": "Server starting: the organism is not ready yet; retry shortly"}}}},
		{"the organism failed to start", func(s *Starting) { s.Fail() },
			startingAnswer{Status: http.StatusServiceUnavailable,
				Body: map[string]any{"jsonrpc": "2.0", "id": 7.0, "error": map[string]any{"code": -32000.0,
					"message": "Server error: the organism did not start; its operator's log says why"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStarting(time.Millisecond)
			tt.setup(s)
			srv := httptest.NewServer(s)
			defer srv.Close()
			if diff := cmp.Diff(tt.want, askStarting(t, srv)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}
