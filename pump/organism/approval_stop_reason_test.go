package organism

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// A pending approval whose conversation is killed, or whose answer is
// cancelled, expires with the reason the conversation's completion gives
// ("conversation killed", "answer cancelled"), not a Go error's text.
func TestStoppedConversationExpiresItsApprovalWithItsReason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stop   func(*pump.Pump, string) (string, error)
		reason string
	}{
		{"kill", (*pump.Pump).Kill, "conversation killed"},
		{"cancel", (*pump.Pump).Cancel, "answer cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"researcher": {runDate}})
			o := agentOrganism(t, m, governed)
			c := startConversation(t, o, "researcher", "what day is it?")
			a := pendingApproval(t, o)
			if _, err := tc.stop(o.Pump, c.id); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			got, err := o.Governance().Approval(t.Context(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := struct{ Status, Reason string }{StatusExpired, tc.reason}
			if diff := cmp.Diff(want, struct{ Status, Reason string }{got.Status, got.Reason}); diff != "" {
				t.Errorf("approval after the %s (-want +got):\n%s", tc.name, diff)
			}
			_, err = o.Governance().Decide(t.Context(), a.ID, true, "alice", "")
			if wantErr := "approval " + a.ID + " expired (" + tc.reason + ")"; err == nil || err.Error() != wantErr {
				t.Errorf("approving after the %s: %v, want %q", tc.name, err, wantErr)
			}
		})
	}
}
