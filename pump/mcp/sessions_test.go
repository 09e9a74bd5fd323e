package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHTTPSessionsBounded: a client that opens sessions without end (each
// initialize one more, none closed) is refused past Options.MaxSessions —
// 503 with Retry-After and a JSON-RPC error — instead of growing the
// process for the hour an idle session lasts; the sessions already open
// go on working, and closing one makes room for a new one.
func TestHTTPSessionsBounded(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: time.Minute, MaxSessions: 3})
	defer b.Close()
	srv := httptest.NewServer(b.HTTPHandler())
	defer srv.Close()
	remove := func(session string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodDelete, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %s", resp.Status)
		}
	}
	post := func(session, body string) (*http.Response, reply) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
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
	var sessions []string
	defer func() { // a session left open would outlive the test
		for _, s := range sessions {
			remove(s)
		}
	}()
	for range 3 {
		resp, _ := post("", initialize)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %s, session %q", resp.Status, resp.Header.Get("Mcp-Session-Id"))
		}
		sessions = append(sessions, resp.Header.Get("Mcp-Session-Id"))
	}
	resp, r := post("", initialize)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		r.Error == nil || !strings.Contains(r.Error.Message, "3 sessions") || string(r.ID) != "7" {
		t.Fatalf("a session past the bound: %s (Retry-After %q) %+v, want 503 naming the bound",
			resp.Status, resp.Header.Get("Retry-After"), r.Error)
	}
	if resp, _ := post(sessions[0], `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode/100 != 2 {
		t.Fatalf("an open session refused: %s", resp.Status)
	}
	if resp, r := post(sessions[0], `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); resp.StatusCode != http.StatusOK || r.Error != nil {
		t.Fatalf("tools/list on an open session: %s %+v", resp.Status, r.Error)
	}
	remove(sessions[1])
	sessions = slices.Delete(sessions, 1, 2)
	resp, _ = post("", initialize)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize once a session closed: %s", resp.Status)
	}
	sessions = append(sessions, resp.Header.Get("Mcp-Session-Id"))
}
