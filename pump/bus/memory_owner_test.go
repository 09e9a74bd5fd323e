package bus

import (
	"net/http"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestMemoryApprovalsAreTheOwners: what an agent asks to remember is the
// user's of the conversation: another operator (or a viewer) neither
// lists, reads, decides nor is pushed the memory consent approval — it
// does not exist for them (404) — while its owner and admins do.
func TestMemoryApprovalsAreTheOwners(t *testing.T) {
	m := newNativeModel(t, `call:remember:{"Content":"Alice's daughter is called Zoe"}`, "Noted.")
	f := newFixtureWith(t, rememberingOrganism(t, m))
	tok := f.tokens()
	alice := tok[auth.Operator]
	olga := f.loginAs("olga", auth.Operator)
	streams := map[string]*websocket.Conn{}
	for name, token := range map[string]string{"olga": olga, "viewer": tok[auth.Viewer], "admin": tok[auth.Admin]} {
		streams[name] = f.dial("/api/v1/ws", token)
		readEvent(t, streams[name], "connected")
	}
	olgaWS := f.dial("/ws", olga)
	readUntil(t, olgaWS, "connected")
	ws := f.dial("/ws", alice)
	readUntil(t, ws, "connected")

	conv := sendOver(t, ws, "keeper", "remember my daughter's name")
	pushed := readUntil(t, ws, "approval")["approval"].(map[string]any)
	id := pushed["id"].(string)
	if pushed["kind"] != "memory" || pushed["thread_id"] != conv {
		t.Fatalf("approval frame %v", pushed)
	}
	for _, tc := range []struct {
		who, method, path, token string
		body                     any
		want, listed             int
	}{
		{"olga", "GET", "/api/v1/approvals?status=pending", olga, nil, http.StatusOK, 0},
		{"olga", "GET", "/api/v1/approvals?thread=" + conv, olga, nil, http.StatusOK, 0},
		{"viewer", "GET", "/api/v1/approvals", tok[auth.Viewer], nil, http.StatusOK, 0},
		{"olga", "GET", "/api/v1/approvals/" + id, olga, nil, http.StatusNotFound, -1},
		{"viewer", "GET", "/api/v1/approvals/" + id, tok[auth.Viewer], nil, http.StatusNotFound, -1},
		{"olga", "POST", "/api/v1/approvals/" + id, olga, map[string]string{"decision": "approve"}, http.StatusNotFound, -1},
		{"olga", "POST", "/api/v1/approvals/" + id, olga, map[string]string{"decision": "deny"}, http.StatusNotFound, -1},
		{"admin", "GET", "/api/v1/approvals?status=pending", tok[auth.Admin], nil, http.StatusOK, 1},
		{"admin", "GET", "/api/v1/approvals/" + id, tok[auth.Admin], nil, http.StatusOK, -1},
		{"alice", "GET", "/api/v1/approvals?status=pending", alice, nil, http.StatusOK, 1},
		{"alice", "GET", "/api/v1/approvals/" + id, alice, nil, http.StatusOK, -1},
	} {
		status, body, _ := f.do(tc.method, tc.path, tc.token, tc.body)
		if status != tc.want {
			t.Fatalf("%s: %s %s: %d %v, want %d", tc.who, tc.method, tc.path, status, body, tc.want)
		}
		if tc.listed >= 0 && len(body["approvals"].([]any)) != tc.listed {
			t.Fatalf("%s: %s %s: %v, want %d approvals", tc.who, tc.method, tc.path, body, tc.listed)
		}
	}
	status, body, _ := f.do("POST", "/api/v1/approvals/"+id, alice, map[string]string{"decision": "approve"})
	if status != http.StatusOK || body["status"] != "approved" {
		t.Fatalf("alice approves: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "Noted." {
		t.Fatalf("reply %v", r)
	}
	// A halt after the decision reaches every stream: what came before it
	// is what each was sent about the approval.
	if status, body, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], nil); status != http.StatusOK {
		t.Fatalf("halt: %d %v", status, body)
	}
	for name, c := range streams {
		var seen []string
		for {
			e := readFrame(t, c)
			if e["event"] == "organism_halted" {
				break
			}
			if e["event"] == "approval" || e["event"] == "approval_decided" {
				seen = append(seen, e["event"].(string))
			}
		}
		want := 0
		if name == "admin" {
			want = 2
		}
		if len(seen) != want {
			t.Errorf("%s's stream: approval events %v, want %d", name, seen, want)
		}
	}
	for {
		e := readFrame(t, olgaWS)
		if e["type"] == "organism_halted" || e["type"] == "halted" {
			break
		}
		if e["type"] == "approval" || e["type"] == "approval_decided" {
			t.Fatalf("olga's /ws was pushed %v", e)
		}
	}
}
