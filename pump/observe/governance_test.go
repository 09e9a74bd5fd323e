package observe

import "testing"

func TestGovernanceDecisionsAreCounted(t *testing.T) {
	m := NewMetrics()
	m.GovernanceDecision("no-rm-rf", "deny")
	m.GovernanceDecision("no-rm-rf", "deny")
	m.GovernanceDecision("", "approved")
	fams := gather(t, m)
	if s := sample(fams, "xmlpipe_governance_decisions_total", "decision", "deny", "rule", "no-rm-rf"); s == nil ||
		s.GetCounter().GetValue() != 2 {
		t.Fatalf("deny sample %v", s)
	}
	if s := sample(fams, "xmlpipe_governance_decisions_total", "decision", "approved", "rule", ""); s == nil ||
		s.GetCounter().GetValue() != 1 {
		t.Fatalf("approved sample %v", s)
	}
}
