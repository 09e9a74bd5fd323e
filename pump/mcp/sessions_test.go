package mcp

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPSessionsBounded: clients that open sessions without end and keep
// them in use are refused past Options.MaxSessions — 503 with Retry-After
// and a JSON-RPC error — instead of growing the process; the sessions
// already open go on working, and one no longer in use makes room for a
// new one. Behind a reverse proxy (one host, its per-host bound lifted, as
// the README says) it is the bound that holds.
func TestHTTPSessionsBounded(t *testing.T) {
	s := newPerAddrServer(t, 3, -1)
	const proxy = "192.0.2.9:1000"
	var ends []func()
	defer func() {
		for _, end := range ends {
			end()
		}
	}()
	var ids []string
	for range 3 {
		id := s.open(proxy)
		ids = append(ids, id)
		ends = append(ends, s.stream(proxy, id))
	}
	resp, r := s.do(http.MethodPost, proxy, "", perAddrInitialize)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		r.Error == nil || !strings.Contains(r.Error.Message, "3 sessions") || string(r.ID) != "7" {
		t.Fatalf("a session past the bound, all in use: %s (Retry-After %q) %+v, want 503 naming the bound",
			resp.Status, resp.Header.Get("Retry-After"), r.Error)
	}
	for _, id := range ids {
		if status := s.listTools(proxy, id); status != http.StatusOK {
			t.Fatalf("tools/list on an open session: %d", status)
		}
	}
	ends[1]() // the second is no longer in use, once the server sees its stream end
	deadline := time.Now().Add(time.Minute)
	for {
		resp, r := s.do(http.MethodPost, proxy, "", perAddrInitialize)
		if resp.StatusCode == http.StatusOK {
			s.sessions = append(s.sessions, openedSession{proxy, resp.Header.Get("Mcp-Session-Id")})
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("initialize once a session is no longer in use: %s %+v", resp.Status, r.Error)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status := s.listTools(proxy, ids[1]); status != http.StatusNotFound {
		t.Errorf("tools/list on the session given up: %d, want 404", status)
	}
	for _, id := range []string{ids[0], ids[2]} {
		if status := s.listTools(proxy, id); status != http.StatusOK {
			t.Errorf("tools/list on a session in use: %d, want 200", status)
		}
	}
}

// TestHTTPIdleSessionMakesRoom: at Options.MaxSessions, all idle — clients
// that closed without a DELETE, as the TypeScript SDK's does, behind a
// proxy — a new client is not locked out until they time out: the session
// used least recently is closed to make room.
func TestHTTPIdleSessionMakesRoom(t *testing.T) {
	s := newPerAddrServer(t, 3, -1)
	a := s.open("192.0.2.1:1000")
	b := s.open("192.0.2.2:1000")
	c := s.open("192.0.2.3:1000")
	if status := s.listTools("192.0.2.1:1000", a); status != http.StatusOK { // a used since c opened
		t.Fatalf("tools/list on a: %d", status)
	}
	s.open("192.0.2.4:1000")
	if status := s.listTools("192.0.2.2:1000", b); status != http.StatusNotFound {
		t.Errorf("tools/list on the session used least recently: %d, want 404 (closed to make room)", status)
	}
	for _, id := range []string{a, c} {
		if status := s.listTools("192.0.2.1:1000", id); status != http.StatusOK {
			t.Errorf("tools/list on %s: %d, want 200", id, status)
		}
	}
}
