package bus

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// The /ws client of a conversation hears how its pending approval ended
// when the conversation is killed, or its answer cancelled: an
// approval_decided frame with status expired, before the conversation's
// complete frame (after which nothing of the conversation is routed to it).
func TestStoppedConversationPushesItsExpiredApproval(t *testing.T) {
	for _, tc := range []struct {
		name, action, reason string
	}{
		{"kill", "kill", "conversation killed"},
		{"cancel", "cancel", pump.CancelledReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
			f := newFixtureWith(t, governedOrganism(t, m))
			tok := f.tokens()
			ws := f.dial("/ws", tok[auth.Operator])
			readUntil(t, ws, "connected")
			conv := sendOver(t, ws, "researcher", "what day is it?")
			id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
			if status, body, _ := f.do("POST", "/api/v1/threads/"+conv+"/"+tc.action, tok[auth.Operator], nil); status != http.StatusOK {
				t.Fatalf("%s: %d %v", tc.action, status, body)
			}
			var got map[string]any
			for got == nil {
				switch fr := readFrame(t, ws); fr["type"] {
				case "approval_decided":
					got = fr["approval"].(map[string]any)
				case "complete":
					t.Fatalf("complete frame before the approval_decided frame: %v", fr)
				}
			}
			want := map[string]any{"id": id, "status": "expired", "reason": tc.reason, "thread_id": conv}
			if diff := cmp.Diff(want, map[string]any{"id": got["id"], "status": got["status"], "reason": got["reason"],
				"thread_id": got["thread_id"]}); diff != "" {
				t.Errorf("approval_decided after the %s (-want +got):\n%s", tc.action, diff)
			}
			readUntil(t, ws, "complete")
		})
	}
}
