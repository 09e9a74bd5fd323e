package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testRemoteHeader carries the remote address a test request pretends to
// come from (every test request comes from loopback).
const testRemoteHeader = "X-Test-Remote"

// perAddrServer serves a bridge bounded to maxPerAddr sessions a client
// host, each test request coming from the address its testRemoteHeader
// names; the sessions a test opens are closed when it ends.
type perAddrServer struct {
	t        *testing.T
	b        *Bridge
	srv      *httptest.Server
	sessions []openedSession
}

type openedSession struct{ remote, session string }

const perAddrInitialize = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

func newPerAddrServer(t *testing.T, maxSessions, maxPerAddr int) *perAddrServer {
	o := startOrganism(t)
	t.Cleanup(func() { o.Shutdown(context.Background()) })
	b := New(o.Pump, Options{Timeout: time.Minute, MaxSessions: maxSessions, MaxSessionsPerAddr: maxPerAddr})
	t.Cleanup(b.Close)
	// Sessions opened a moment ago may be given up: the tests' are.
	b.evictIdle = 0
	s := &perAddrServer{t: t, b: b}
	var once sync.Once
	var h http.Handler
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { h = b.HTTPHandler() }) // after the test set evictIdle
		r.RemoteAddr = r.Header.Get(testRemoteHeader)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { // a session left open would outlive the test
		for _, o := range s.sessions {
			if resp := s.send(http.MethodGet+"-DELETE", o.remote, o.session, ""); resp != nil {
				resp.Body.Close()
			}
		}
	})
	return s
}

// send sends one request (method "GET-DELETE" is a DELETE whose status is
// not checked) and returns the response, its body unread.
func (s *perAddrServer) send(method, remote, session, body string) *http.Response {
	s.t.Helper()
	if method == http.MethodGet+"-DELETE" {
		method = http.MethodDelete
	}
	req, err := http.NewRequest(method, s.srv.URL, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set(testRemoteHeader, remote)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// do sends one request and decodes its JSON-RPC answer, if any.
func (s *perAddrServer) do(method, remote, session, body string) (*http.Response, reply) {
	s.t.Helper()
	resp := s.send(method, remote, session, body)
	defer resp.Body.Close()
	var r reply
	if resp.Header.Get("Content-Type") == "application/json" {
		_ = json.NewDecoder(resp.Body).Decode(&r)
	}
	return resp, r
}

// open opens a session from remote.
func (s *perAddrServer) open(remote string) string {
	s.t.Helper()
	resp, r := s.do(http.MethodPost, remote, "", perAddrInitialize)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		s.t.Fatalf("initialize from %s: %s, session %q, %+v", remote, resp.Status, resp.Header.Get("Mcp-Session-Id"), r.Error)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	s.sessions = append(s.sessions, openedSession{remote, id})
	return id
}

// listTools reports the status of a tools/list on session.
func (s *perAddrServer) listTools(remote, session string) int {
	s.t.Helper()
	resp, r := s.do(http.MethodPost, remote, session, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	if resp.StatusCode == http.StatusOK && r.Error != nil {
		s.t.Fatalf("tools/list on %s: %+v", session, r.Error)
	}
	return resp.StatusCode
}

// stream opens session's standalone stream (GET), which stays open — a
// request in progress — until the returned function runs.
func (s *perAddrServer) stream(remote, session string) (end func()) {
	s.t.Helper()
	resp := s.send(http.MethodGet, remote, session, "")
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		s.t.Fatalf("GET stream of %s: %s", session, resp.Status)
	}
	return func() { resp.Body.Close() }
}

// TestHTTPSessionsPerAddressBounded: one client address cannot take every
// session slot: past Options.MaxSessionsPerAddr sessions open from its
// host (whatever its ports), all of them in use, its initialize is
// answered 503 with Retry-After and a JSON-RPC error, while another
// address still opens sessions; closing one of the first address's
// sessions makes room for it again.
func TestHTTPSessionsPerAddressBounded(t *testing.T) {
	s := newPerAddrServer(t, 5, 2)
	a1 := s.open("192.0.2.1:1000")
	a2 := s.open("192.0.2.1:1001")
	// Both in use: a standalone stream open on each.
	end1, end2 := s.stream("192.0.2.1:1000", a1), s.stream("192.0.2.1:1001", a2)
	defer end1()
	resp, r := s.do(http.MethodPost, "192.0.2.1:1002", "", perAddrInitialize)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		r.Error == nil || r.Error.Code != codeServerBusy || !strings.Contains(r.Error.Message, "2 sessions") ||
		!strings.Contains(r.Error.Message, "192.0.2.1") || string(r.ID) != "7" {
		t.Fatalf("a third session from one address: %s (Retry-After %q) %+v, want 503 naming the per-address bound",
			resp.Status, resp.Header.Get("Retry-After"), r.Error)
	}
	s.open("198.51.100.7:1000")
	s.open("[2001:db8::1]:1000")
	if status := s.listTools("192.0.2.1:1000", a1); status != http.StatusOK {
		t.Fatalf("tools/list on an open session of the bounded address: %d", status)
	}
	end2()
	if resp, _ := s.do(http.MethodDelete, "192.0.2.1:1001", a2, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	s.sessions = append(s.sessions[:1], s.sessions[2:]...)
	s.open("192.0.2.1:1003")
}

// TestHTTPIdleSessionMakesRoomForItsHost: a host whose sessions are all
// open and idle — a client that closes without a DELETE, as the
// TypeScript SDK's does, run once more than the bound — is not locked out
// until they time out: its session used least recently is closed to make
// room (the spec's 404 tells its client to start a new one), the others
// go on; a session in use (a call running, a stream open) is never closed
// so, and another host's never.
func TestHTTPIdleSessionMakesRoomForItsHost(t *testing.T) {
	s := newPerAddrServer(t, 5, 2)
	other := s.open("198.51.100.7:1000")
	a1 := s.open("192.0.2.1:1000")
	a2 := s.open("192.0.2.1:1001")
	if status := s.listTools("192.0.2.1:1000", a1); status != http.StatusOK { // a1 used since a2 opened
		t.Fatalf("tools/list on a1: %d", status)
	}
	s.open("192.0.2.1:1002")
	if status := s.listTools("192.0.2.1:1001", a2); status != http.StatusNotFound {
		t.Errorf("tools/list on the host's session used least recently: %d, want 404 (closed to make room)", status)
	}
	if status := s.listTools("192.0.2.1:1000", a1); status != http.StatusOK {
		t.Errorf("tools/list on the host's other session: %d, want 200", status)
	}
	if status := s.listTools("198.51.100.7:1000", other); status != http.StatusOK {
		t.Errorf("tools/list on another host's session: %d, want 200", status)
	}
}

// TestHTTPNewSessionIsNotGivenUp: a session opened a moment ago is not
// closed to make room, though no request of it runs — its client is still
// connecting (its initialized notification, its stream are on their way):
// at the bound, the initialize is refused (503) instead, and the client
// connecting goes on.
func TestHTTPNewSessionIsNotGivenUp(t *testing.T) {
	s := newPerAddrServer(t, 5, 1)
	s.b.evictIdle = time.Hour
	a := s.open("192.0.2.1:1000")
	resp, r := s.do(http.MethodPost, "192.0.2.1:1001", "", perAddrInitialize)
	if resp.StatusCode != http.StatusServiceUnavailable || r.Error == nil || r.Error.Code != codeServerBusy {
		t.Errorf("a second session from the host, its first just opened: %s %+v, want 503", resp.Status, r.Error)
	}
	if status := s.listTools("192.0.2.1:1000", a); status != http.StatusOK {
		t.Errorf("tools/list on the session just opened: %d, want 200", status)
	}
}
