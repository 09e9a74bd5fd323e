package organism

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// The refusal of an approval that ended without a human's yes: a denial
// says who and why at medium severity (or its rules'), a timeout is low
// unless rules sent the message to review.
func TestApprovalRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Approval
		want *xmlpipe.Refusal
	}{
		{"denied", Approval{Kind: KindTool, Status: StatusDenied, DecidedBy: "bob", Reason: "not on production"},
			stage.NewRefusal("denied by bob: not on production", "", stage.SeverityMedium)},
		{"tool call timed out", Approval{Kind: KindTool, Status: StatusExpired, Reason: "approval timed out"},
			stage.NewRefusal("approval timed out", "", stage.SeverityLow)},
		{"memory timed out", Approval{Kind: KindMemory, Status: StatusExpired, Reason: "approval timed out"},
			stage.NewRefusal("approval timed out", "", stage.SeverityLow)},
		{"review timed out", Approval{Kind: KindReview, Status: StatusExpired, Reason: "approval timed out",
			Rules: []string{"payments"}, Severity: stage.SeverityHigh, Suggestion: "ask finance"},
			stage.NewRefusal("approval timed out", "ask finance", stage.SeverityHigh, "payments")},
		{"no reason recorded", Approval{Kind: KindTool, Status: StatusExpired},
			stage.NewRefusal("approval timed out", "", stage.SeverityLow)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.Refusal()); diff != "" {
				t.Errorf("Refusal() (-want +got):\n%s", diff)
			}
		})
	}
}
