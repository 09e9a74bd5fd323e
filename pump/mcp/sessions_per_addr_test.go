package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testRemoteHeader carries the remote address a test request pretends to
// come from (every test request comes from loopback).
const testRemoteHeader = "X-Test-Remote"

// TestHTTPSessionsPerAddressBounded: one client address cannot take every
// session slot: past Options.MaxSessionsPerAddr sessions open from its
// host (whatever its ports), its initialize is answered 503 with
// Retry-After and a JSON-RPC error, while another address still opens
// sessions; closing one of the first address's sessions makes room for it
// again.
func TestHTTPSessionsPerAddressBounded(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: time.Minute, MaxSessions: 5, MaxSessionsPerAddr: 2})
	defer b.Close()
	h := b.HTTPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get(testRemoteHeader)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	do := func(method, remote, session, body string) (*http.Response, reply) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(testRemoteHeader, remote)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r reply
		if resp.Header.Get("Content-Type") == "application/json" {
			_ = json.NewDecoder(resp.Body).Decode(&r)
		}
		return resp, r
	}
	const initialize = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	type opened struct{ remote, session string }
	var sessions []opened
	defer func() { // a session left open would outlive the test
		for _, s := range sessions {
			do(http.MethodDelete, s.remote, s.session, "")
		}
	}()
	open := func(remote string) {
		t.Helper()
		resp, r := do(http.MethodPost, remote, "", initialize)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize from %s: %s, session %q, %+v", remote, resp.Status, resp.Header.Get("Mcp-Session-Id"), r.Error)
		}
		sessions = append(sessions, opened{remote, resp.Header.Get("Mcp-Session-Id")})
	}
	open("192.0.2.1:1000")
	open("192.0.2.1:1001")
	resp, r := do(http.MethodPost, "192.0.2.1:1002", "", initialize)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		r.Error == nil || r.Error.Code != codeServerBusy || !strings.Contains(r.Error.Message, "2 sessions") ||
		!strings.Contains(r.Error.Message, "192.0.2.1") || string(r.ID) != "7" {
		t.Fatalf("a third session from one address: %s (Retry-After %q) %+v, want 503 naming the per-address bound",
			resp.Status, resp.Header.Get("Retry-After"), r.Error)
	}
	open("198.51.100.7:1000")
	open("[2001:db8::1]:1000")
	if resp, r := do(http.MethodPost, sessions[0].remote, sessions[0].session, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); resp.StatusCode != http.StatusOK || r.Error != nil {
		t.Fatalf("tools/list on an open session of the bounded address: %s %+v", resp.Status, r.Error)
	}
	if resp, _ := do(http.MethodDelete, sessions[1].remote, sessions[1].session, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	sessions = append(sessions[:1], sessions[2:]...)
	open("192.0.2.1:1003")
}
