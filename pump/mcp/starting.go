package mcp

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultStartHold bounds how long Starting holds a request that arrived
// before the bridge was ready: under the request timeout MCP clients use
// (60 s in the official SDKs), so a client that connected early sees a slow
// first answer, not an error.
const DefaultStartHold = 30 * time.Second

// startRetryAfter is the Retry-After (seconds) of a request that waited
// the whole hold.
const startRetryAfter = 5

// Starting is the HTTP handler of an address opened before the organism
// behind it is built (building one with WASM modules takes seconds): a
// client may connect at once. A request that arrives before Serve is held
// until Serve — then served by the bridge's handler — or Fail, for at most
// the hold; one the hold ran out for is answered 503 with Retry-After and a
// JSON-RPC error, one held when Fail is called 503 with the failure.
//
// Holding rather than refusing at once: MCP clients do not retry a failed
// initialize, they report it, while every one of them waits for a slow
// answer; the bounded hold keeps a start that never ends from holding
// requests forever.
type Starting struct {
	hold   time.Duration
	ready  chan struct{} // closed by Serve or Fail
	once   sync.Once
	next   http.Handler // set before ready is closed
	failed bool         // Fail was called, set before ready is closed
	// onHold, when set (by tests), is called as a request begins to wait.
	onHold func()
}

// NewStarting returns a Starting that holds early requests for at most
// hold (DefaultStartHold when 0 or negative).
func NewStarting(hold time.Duration) *Starting {
	if hold <= 0 {
		hold = DefaultStartHold
	}
	return &Starting{hold: hold, ready: make(chan struct{})}
}

// Serve hands every request — the held ones and those after — to next
// (the bridge's HTTPHandler). Only the first of Serve and Fail counts.
func (s *Starting) Serve(next http.Handler) {
	s.once.Do(func() {
		s.next = next
		close(s.ready)
	})
}

// Fail answers every request — the held ones and those after — with a
// JSON-RPC error saying the organism did not start. Why is for the
// operator's log, not the client: it tells of the configuration (paths,
// lines), which an unauthenticated client has no business reading. Only
// the first of Serve and Fail counts.
func (s *Starting) Fail() {
	s.once.Do(func() {
		s.failed = true
		close(s.ready)
	})
}

// ServeHTTP serves r once the bridge is ready (see Starting).
func (s *Starting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.ready:
	default:
		if !s.wait(r) {
			w.Header().Set("Retry-After", strconv.Itoa(startRetryAfter))
			writeRPCError(w, http.StatusServiceUnavailable, rpcError{ID: requestID(w, r), Code: codeServerBusy,
				Message: "Server starting: the organism is not ready yet; retry shortly"})
			return
		}
	}
	if s.failed {
		writeRPCError(w, http.StatusServiceUnavailable, rpcError{ID: requestID(w, r), Code: codeServerBusy,
			Message: "Server error: the organism did not start; its operator's log says why"})
		return
	}
	s.next.ServeHTTP(w, r)
}

// wait holds r until ready, reporting false when the hold ran out or the
// client went away first.
func (s *Starting) wait(r *http.Request) bool {
	if s.onHold != nil {
		s.onHold()
	}
	t := time.NewTimer(s.hold)
	defer t.Stop()
	select {
	case <-s.ready:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	return false
}

// requestID is the id of r's JSON-RPC request, read from its body, or nil
// (null) when it has none that can be echoed.
func requestID(w http.ResponseWriter, r *http.Request) json.RawMessage {
	if r.Method != http.MethodPost {
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
	if err != nil {
		return nil
	}
	return recoverID(body)
}
