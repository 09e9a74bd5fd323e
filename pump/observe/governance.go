package observe

import "github.com/prometheus/client_golang/prometheus"

// governance counts the organism's governance decisions.
type governance struct {
	decisions *prometheus.CounterVec
}

func newGovernance() *governance {
	return &governance{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "governance_decisions_total",
		Help: "Governance decisions by constitution rule (\"\" for a call an approval list holds) and decision: " +
			"deny, review, hold, approved, denied, expired."}, []string{"rule", "decision"})}
}

// GovernanceDecision counts one decision in governance_decisions_total;
// it makes the metrics the organism's governance observer
// (organism.Options.GovernanceObserver).
func (m *Metrics) GovernanceDecision(rule, decision string) {
	m.gov.decisions.WithLabelValues(rule, decision).Inc()
}
