package bus

import (
	"net/http"
	"testing"
)

// TestOpenPathsAnswerWrongMethodWith405: the reference's middleware lets the
// paths /auth/login and /health through without a token whatever the
// method (agentserver/server/app.py), so its router answers a wrong method
// 405 — a client probing GET /auth/login learns the method, not that it
// lacks a token it cannot have yet. Other paths still need the token first.
func TestOpenPathsAnswerWrongMethodWith405(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		method, path string
		status       int
		err, allow   string
	}{
		{"GET", "/auth/login", http.StatusMethodNotAllowed, "Method Not Allowed", "POST"},
		{"PUT", "/auth/login", http.StatusMethodNotAllowed, "Method Not Allowed", "POST"},
		{"POST", "/health", http.StatusMethodNotAllowed, "Method Not Allowed", "GET, HEAD"},
		{"DELETE", "/health", http.StatusMethodNotAllowed, "Method Not Allowed", "GET, HEAD"},
		{"POST", "/auth/me", http.StatusUnauthorized, "Missing Authorization", ""},
		{"GET", "/auth/logout", http.StatusUnauthorized, "Missing Authorization", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, body, h := f.do(tc.method, tc.path, "", nil)
			if status != tc.status || body["error"] != tc.err || h.Get("Allow") != tc.allow {
				t.Errorf("%d %v Allow %q, want %d %q Allow %q", status, body, h.Get("Allow"), tc.status, tc.err, tc.allow)
			}
		})
	}
}
