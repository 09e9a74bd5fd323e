package bus

import (
	"cmp"
	"net/http"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// decisionOutcomes are the outcomes of a conversation's refusals in its
// messages (scope conversation), in order.
func (f *fixture) decisionOutcomes(token, conv string) []string {
	f.t.Helper()
	status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages?scope=conversation", token, nil)
	if status != http.StatusOK {
		f.t.Fatalf("messages: %d %v", status, body)
	}
	var out []string
	for _, v := range body["messages"].([]any) {
		if m := v.(map[string]any); m["kind"] == "refusal" {
			outcome, _ := m["outcome"].(string)
			out = append(out, outcome)
		}
	}
	return out
}

// TestPolicyOutcomesReadAsDecisions: a call a constitution rule denies is
// refused by policy — a decision, as a human's denial is — and reads
// denied; a call whose approval nobody decided in time reads expired:
// neither is a failure (error). REST (the thread, ?status=), the refusal's
// outcome in the messages and the stream's thread_updated agree.
func TestPolicyOutcomesReadAsDecisions(t *testing.T) {
	for _, tc := range []struct {
		name, send, call, yaml, status string
	}{
		{"constitution deny", "clean up", "<RunCommand><Command>rm -rf /tmp/x</Command></RunCommand>", governedYAML,
			"denied"},
		{"constitution deny of the user's message", "please rm -rf /", "", governedYAML, "denied"},
		{"approval timed out", "clean up", "<RunCommand><Command>date</Command></RunCommand>",
			strings.Replace(governedYAML, "    approval: [run_command]\n",
				"    approval: [run_command]\n    approval_timeout: 1s\n", 1), "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newLoopModel(t, cmp.Or(tc.call, "I could not."), "I could not.")
			f := newFixtureWith(t, governedOrganismFrom(t, m, tc.yaml))
			tok := f.tokens()
			ws := f.dial("/ws", tok[auth.Operator])
			readUntil(t, ws, "connected")
			stream := f.dial("/api/v1/ws", tok[auth.Viewer])
			readEvent(t, stream, "connected")
			conv := sendOver(t, ws, "researcher", tc.send)
			if r := readUntil(t, ws, "reply"); tc.call != "" && r["text"] != "I could not." {
				t.Fatalf("reply %v", r)
			}
			if e := readEvent(t, stream, "thread_updated"); e["thread_id"] != conv || e["status"] != tc.status {
				t.Errorf("stream: %v, want the conversation %s", e, tc.status)
			}
			f.waitJournal()
			status, body, _ := f.do("GET", "/api/v1/threads/"+conv, tok[auth.Viewer], nil)
			if status != http.StatusOK || body["status"] != tc.status || body["error"] != nil {
				t.Errorf("thread: %d %v, want status %s", status, body, tc.status)
			}
			if !f.threadListed(tok[auth.Viewer], tc.status, conv) || f.threadListed(tok[auth.Viewer], "error", conv) {
				t.Errorf("?status=%s does not list %s, or ?status=error does", tc.status, conv)
			}
			if got := f.decisionOutcomes(tok[auth.Viewer], conv); len(got) != 1 || got[0] != tc.status {
				t.Errorf("the refusal's outcome %v, want [%s]", got, tc.status)
			}
		})
	}
}

// TestDeniedStatusAgreesAcrossRestart: a denial is the outcome of the
// answer it happened in. After a restart REST still reads it; continued by
// its owner, the conversation's new answer reads completed on the stream
// and over REST alike.
func TestDeniedStatusAgreesAcrossRestart(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "I was not allowed.", "Fine.")
	f := newFixtureWith(t, governedOrganism(t, m))
	aliceSecret, adaSecret := f.user("alice", auth.Operator), f.user("ada", auth.Admin)
	alice := f.login("alice", aliceSecret)
	ws := f.dial("/ws", alice)
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "researcher", "what day is it?")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, alice,
		map[string]string{"decision": "deny", "reason": "not now"}); status != http.StatusOK {
		t.Fatalf("deny: %d %v", status, body)
	}
	readUntil(t, ws, "complete")
	ws.Close()
	f.waitJournal()

	f.restartOrganism()
	alice, ada := f.login("alice", aliceSecret), f.login("ada", adaSecret)
	if _, body, _ := f.do("GET", "/api/v1/threads/"+conv, ada, nil); body["status"] != "denied" {
		t.Errorf("after a restart the denied conversation reads %v, want denied", body["status"])
	}
	// An answer recovered from before the restart (its first message
	// journaled before the server started) completes with what the journal
	// says of it, as REST reads it.
	recovered := pump.Event{Kind: pump.EventComplete, Conversation: conv, Turn: 1}
	if got := f.srv.completionStatus(recovered); got != "denied" {
		t.Errorf("the completion of the denied answer recovered after the restart streams %q, want denied", got)
	}
	stream := f.dial("/api/v1/ws", ada)
	readEvent(t, stream, "connected")
	ws = f.dial("/ws", alice)
	readUntil(t, ws, "connected")
	if got := wsSendOn(t, ws, "researcher", "and now?", conv); got["type"] != "sent" {
		t.Fatalf("continue: %v", got)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "Fine." {
		t.Fatalf("reply %v", r)
	}
	e := readEvent(t, stream, "thread_updated")
	f.waitJournal()
	_, body, _ := f.do("GET", "/api/v1/threads/"+conv, ada, nil)
	if e["thread_id"] != conv || e["status"] != body["status"] || body["status"] != "completed" {
		t.Errorf("continued after the restart: stream %v, REST %v; want both completed", e, body["status"])
	}
}
