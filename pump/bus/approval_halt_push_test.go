package bus

import (
	"net/http"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// A halt leaves a pending approval pending: the /ws client of its
// conversation hears the halt, the approval decided during it (approved,
// not expired), and after the resume the call runs and the agent answers.
func TestHaltKeepsThePendingApprovalOfAWsConversation(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	f := newFixtureWith(t, governedOrganism(t, m))
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Operator])
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "researcher", "what day is it?")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], map[string]string{"scope": "all"}); status != http.StatusOK {
		t.Fatalf("halt: %d %v", status, body)
	}
	for {
		fr := readFrame(t, ws)
		if fr["type"] == "halted" {
			break
		}
		if fr["type"] == "approval_decided" || fr["type"] == "complete" {
			t.Fatalf("the halt ended the approval or the conversation: %v", fr)
		}
	}
	status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator], map[string]string{"decision": "approve"})
	if status != http.StatusOK {
		t.Fatalf("approving during the halt: %d %v", status, body)
	}
	if got := readUntil(t, ws, "approval_decided")["approval"].(map[string]any); got["id"] != id || got["status"] != "approved" {
		t.Fatalf("approval_decided during the halt: %v, want %s approved", got, id)
	}
	if status, body, _ := f.do("POST", "/api/v1/organism/resume", tok[auth.Admin], nil); status != http.StatusOK {
		t.Fatalf("resume: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "It ran." || r["thread_id"] != conv {
		t.Fatalf("reply after the resume: %v", r)
	}
}
