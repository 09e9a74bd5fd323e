package bus

import (
	"net/http"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestReviewNeedsFourEyes: a message a constitution review rule holds in
// a user's conversation is decided by someone else — the user who began
// it may deny it but not approve it (403, saying why, the approval still
// pending), while another operator or an admin may; a user who is the
// only one with the operator role or above may approve their own, or
// nobody could.
func TestReviewNeedsFourEyes(t *testing.T) {
	// hold injects a payment as token's user and returns its pending
	// review approval's id.
	hold := func(t *testing.T, f *fixture, token string) string {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/inject", token,
			map[string]any{"to": "researcher", "payload": map[string]string{"text": "please pay $5 to eve"}})
		if status != http.StatusOK {
			t.Fatalf("inject: %d %v", status, body)
		}
		status, body, _ = f.do("GET", "/api/v1/approvals?status=pending&thread="+body["thread_id"].(string), token, nil)
		list, _ := body["approvals"].([]any)
		if status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["kind"] != "review" {
			t.Fatalf("pending approvals: %d %v, want the held payment's review", status, body)
		}
		return list[0].(map[string]any)["id"].(string)
	}
	decide := func(t *testing.T, f *fixture, token, id, decision string) (int, map[string]any) {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/approvals/"+id, token, map[string]string{"decision": decision})
		return status, body
	}

	t.Run("others can decide", func(t *testing.T) {
		f := newFixtureWith(t, gatedOrganism(t, newLoopModel(t, "Paid.")))
		alice := f.loginAs("alice", auth.Operator)
		bob := f.loginAs("bob", auth.Operator)
		admin := f.loginAs("root", auth.Admin)

		id := hold(t, f, alice)
		status, body := decide(t, f, alice, id, "approve")
		if msg, _ := body["error"].(string); status != http.StatusForbidden || !strings.Contains(msg, "four eyes") ||
			!strings.Contains(msg, "alice") {
			t.Fatalf("alice approves her own reviewed message: %d %v, want 403 saying why", status, body)
		}
		if status, body, _ := f.do("GET", "/api/v1/approvals/"+id, alice, nil); status != http.StatusOK ||
			body["status"] != "pending" {
			t.Fatalf("after the refused approval: %d %v, want it pending", status, body)
		}
		if status, body := decide(t, f, bob, id, "approve"); status != http.StatusOK || body["decided_by"] != "bob" {
			t.Fatalf("bob approves alice's: %d %v", status, body)
		}

		id = hold(t, f, alice)
		if status, body := decide(t, f, admin, id, "approve"); status != http.StatusOK || body["decided_by"] != "root" {
			t.Fatalf("an admin approves alice's: %d %v", status, body)
		}

		id = hold(t, f, alice)
		if status, body := decide(t, f, alice, id, "deny"); status != http.StatusOK || body["status"] != "denied" {
			t.Fatalf("alice denies her own: %d %v", status, body)
		}
	})

	t.Run("the only decider", func(t *testing.T) {
		f := newFixtureWith(t, gatedOrganism(t, newLoopModel(t, "Paid.")))
		alice := f.loginAs("alice", auth.Operator)
		f.loginAs("val", auth.Viewer) // a viewer decides nothing
		id := hold(t, f, alice)
		if status, body := decide(t, f, alice, id, "approve"); status != http.StatusOK || body["status"] != "approved" {
			t.Fatalf("alice, the only operator, approves her own: %d %v", status, body)
		}
	})
}
