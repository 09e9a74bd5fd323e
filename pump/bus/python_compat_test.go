package bus

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
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

// TestWSUnknownTargetListsAvailable: the reference's SystemPipeline refuses
// an unknown target with "Unknown target: X. Available: [...]" (the
// listener names as a Python list), which its console client prints after
// "Error: " — the user sees what to type instead. The list is what the
// socket's listeners command answers (a profile's hidden listeners are
// neither there nor here), in its order.
func TestWSUnknownTargetListsAvailable(t *testing.T) {
	f := newFixture(t)
	c := f.dial("/ws", f.loginAs("olga", auth.Operator))
	readFrame(t, c)
	writeFrame(t, c, frame{"type": "listeners"})
	ls := readFrame(t, c)
	names, _ := ls["listeners"].([]any)
	if len(names) == 0 {
		t.Fatalf("listeners: %v", ls)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n.(string) + "'"
	}
	available := "[" + strings.Join(quoted, ", ") + "]"
	for _, req := range []frame{
		{"type": "send", "raw": "@nobody hi"},
		{"type": "send", "target": "nobody", "content": "hi"},
	} {
		writeFrame(t, c, req)
		wantError("Unknown target: nobody. Available: "+available, "unknown_target")(t, readFrame(t, c))
	}
}

// TestWSNonStringTypeIsUnknown: the reference answers any "type" it has no
// case for — a number or null too, read from valid JSON — with "Unknown
// message type: …"; "Invalid JSON" is for frames that are not JSON (or not
// an object).
func TestWSNonStringTypeIsUnknown(t *testing.T) {
	f := newFixture(t)
	c := f.dial("/ws", f.loginAs("olga", auth.Operator))
	readFrame(t, c)
	tests := []struct{ frame, want string }{
		{`{"type":5}`, "Unknown message type: 5"},
		{`{"type":null}`, "Unknown message type: null"},
		{`{"type":["ping"]}`, `Unknown message type: ["ping"]`},
		{`{"type":"dance"}`, "Unknown message type: dance"},
		{`{not json`, "Invalid JSON"},
		{`[1,2]`, "Invalid JSON"},
		{`{"type":"send","raw":5}`, "Invalid JSON"},
	}
	for _, tc := range tests {
		if err := c.WriteMessage(websocket.TextMessage, []byte(tc.frame)); err != nil {
			t.Fatal(err)
		}
		wantError(tc.want, "bad_request")(t, readFrame(t, c))
	}
}
