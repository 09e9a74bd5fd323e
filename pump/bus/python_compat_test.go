package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
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

// TestReferenceClient runs testdata/refclient.py — a client written as the
// reference's console client is (JSON login, bearer header, /ws JSON
// frames, the next frame taken as a request's answer), in Python with the
// standard library only — against the bus, and checks every answer with
// what the reference server gives (python-reference.md §7.1), the
// documented differences included: a login needs "totp", a wrong method on
// /auth/login is 405, sent names the target, and the conversation's events
// follow "sent". Skipped where there is no python3.
func TestReferenceClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	f := newFixture(t)
	secret := f.user("alice", auth.Operator)
	f.nextStep()
	u, err := url.Parse(f.base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/refclient.py", u.Hostname(), u.Port(), "alice", password, f.code(secret))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("refclient.py: %v\n%s", err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("refclient.py printed %q: %v", out, err)
	}
	e := func(msg string) map[string]any { return map[string]any{"error": msg} }
	wsErr := func(msg string) map[string]any {
		return map[string]any{"type": "error", "error": msg, "code": "bad_request"}
	}
	want := map[string]any{
		"health":                []any{200.0, map[string]any{"status": "ok"}},
		"login_bad_json":        []any{400.0, e("Invalid JSON")},
		"login_empty":           []any{400.0, e("Credentials required")},
		"login_reference_body":  []any{400.0, e("TOTP code required")}, // the reference needs no TOTP (DESIGN §6)
		"login_wrong_password":  []any{401.0, e("Invalid credentials")},
		"login":                 []any{200.0, []any{"expires_at", "expires_in", "role", "token", "username"}},
		"token_is_64_hex":       true,
		"me_no_header":          []any{401.0, e("Missing Authorization")},
		"me_bad_token":          []any{401.0, e("Invalid token")},
		"me":                    []any{200.0, "alice", "operator"},
		"get_login":             []any{405.0, e("Method Not Allowed")},
		"unknown_path_no_token": []any{401.0, e("Missing Authorization")},
		"ws_status":             101.0,
		"connected":             map[string]any{"type": "connected", "username": "alice", "role": "operator"},
		"ping":                  map[string]any{"type": "pong"},
		"unknown_type":          wsErr("Unknown message type: dance"),
		"no_type":               wsErr("Unknown message type: "),
		"send_no_target":        wsErr("Missing target"),
		"send_no_content":       wsErr("Missing content"),
		"send_empty":            wsErr("Empty message"),
		"send_no_at":            wsErr("No target specified. Use @target message format."),
		"send_at_only":          wsErr("No target specified. Use @target message format."),
		"send_unknown_target": map[string]any{"type": "error", "code": "unknown_target",
			"error": "Unknown target: nobody. Available: ['system.boot', 'system.todo', 'system.todo-complete', " +
				"'core.request-schema', 'core.request-example', 'core.request-prompt', 'core.list-capabilities', " +
				"'greeter', 'shouter', 'response-handler']"},
		"logout":          []any{200.0, map[string]any{"message": "Logged out"}},
		"me_after_logout": []any{401.0, e("Invalid token")},
	}
	for key, w := range want {
		if diff := cmp.Diff(w, got[key]); diff != "" {
			t.Errorf("%s (-reference +bus):\n%s", key, diff)
		}
	}
	for _, key := range []string{"listeners", "targets"} {
		l, _ := got[key].(map[string]any)
		if names, _ := l["listeners"].([]any); l["type"] != "listeners" || !slices.Contains(names, any("greeter")) {
			t.Errorf("%s: %v", key, got[key])
		}
	}
	for _, key := range []string{"send_raw", "send_target"} {
		s, _ := got[key].(map[string]any)
		if id, _ := s["thread_id"].(string); s["type"] != "sent" || s["target"] != "greeter" || !stage.IsThreadID(id) {
			t.Errorf("%s: %v, want a sent frame naming greeter and the conversation", key, got[key])
		}
	}
	if ev, _ := got["send_raw_events"].([]any); len(ev) == 0 || ev[len(ev)-1] != "complete" || !slices.Contains(ev, any("message")) {
		t.Errorf("events after sent: %v, want messages then complete", got["send_raw_events"])
	}
}
