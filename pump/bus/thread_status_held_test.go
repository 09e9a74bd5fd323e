package bus

import (
	"net/http"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestHeldConversationStaysActiveAcrossRestart: a conversation whose call
// waits for an approval is active — GET /api/v1/threads/{id}, the
// ?status=active filter and so the dashboard, which offers cancel and kill
// on active conversations only — and stays so after the organism restarts
// (the call waits again under the same id), not completed — and the agent
// that made the call reads waiting, not idle; approved, it completes.
func TestHeldConversationStaysActiveAcrossRestart(t *testing.T) {
	f := newFixtureWith(t, heldHello(t))
	secret := f.user("olga", auth.Operator)
	op := f.login("olga", secret)
	status, body, _ := f.do(http.MethodPost, "/api/v1/inject", op,
		map[string]any{"to": "greeter", "payload": map[string]string{"name": "Dan"}})
	if status != http.StatusOK {
		t.Fatalf("inject: %d %v", status, body)
	}
	conv := body["thread_id"].(string)
	approval := waitPendingApproval(t, f, op, conv)

	check := func(when string) {
		t.Helper()
		// The greeter forwarded the held call: it waits on it.
		if _, body, _ := f.do(http.MethodGet, "/api/v1/agents/greeter", op, nil); body["state"] != "waiting" {
			t.Errorf("%s: the greeter reads %v, want waiting", when, body["state"])
		}
		if _, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, op, nil); body["status"] != statusActive {
			t.Errorf("%s: the held conversation reads %v, want active", when, body["status"])
		}
		_, body, _ := f.do(http.MethodGet, "/api/v1/threads?status=active", op, nil)
		found := false
		for _, v := range body["threads"].([]any) {
			found = found || v.(map[string]any)["id"] == conv
		}
		if !found {
			t.Errorf("%s: ?status=active does not list the held conversation: %v", when, body)
		}
	}
	check("before the restart")
	f.waitJournal()
	f.restartOrganism()
	op = f.login("olga", secret)
	if got := waitPendingApproval(t, f, op, conv); got != approval {
		t.Fatalf("after the restart the approval is %s, want %s", got, approval)
	}
	check("after the restart")

	if status, body, _ := f.do(http.MethodPost, "/api/v1/approvals/"+approval, op,
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	waitLong(t, "the approved conversation completes", func() bool {
		_, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, op, nil)
		return body["status"] == statusCompleted
	})
}

// waitPendingApproval waits for the pending approval of conversation conv
// and returns its id.
func waitPendingApproval(t *testing.T, f *fixture, token, conv string) string {
	t.Helper()
	var id string
	waitLong(t, "a pending approval of "+conv, func() bool {
		_, body, _ := f.do(http.MethodGet, "/api/v1/approvals?status=pending&thread="+conv, token, nil)
		list, _ := body["approvals"].([]any)
		if len(list) == 0 {
			return false
		}
		id = list[0].(map[string]any)["id"].(string)
		return true
	})
	return id
}

// waitLong waits until cond holds (checked every 20 ms) for at most a
// minute — generous for a loaded machine — or fails.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
