package observe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

// loopControl counts the AEIOU v3 loop control of the organism's agents
// (loop_control: aeiou): decisions, ignored tokens, lints and mints.
type loopControl struct {
	decisions, ignored, lints, mints *prometheus.CounterVec
}

func newLoopControl() *loopControl {
	return &loopControl{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "aeiou_decisions_total",
			Help: "AEIOU loop-control decisions by decision (continue, done, abort, halt) and reason (a halt's code, " +
				"fallback for an abort the fallback signer minted, \"\" otherwise)."}, []string{"decision", "reason"}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "aeiou_tokens_ignored_total",
			Help: "AEIOU control tokens ignored by reason: forged, altered, replayed, expired, quoted, misbound…"},
			[]string{"reason"}),
		lints: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "aeiou_lints_total",
			Help: "AEIOU lints raised, by lint."}, []string{"lint"}),
		mints: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "aeiou_mints_total",
			Help: "AEIOU tokens minted by signer: primary, fallback (an abort after the primary failed), failed."},
			[]string{"signer"}),
	}
}

func (l *loopControl) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.decisions, l.ignored, l.lints, l.mints}
}

// Observe counts one AEIOU loop-control event; it makes the metrics the
// organism's loop-control observer (organism.Options.LoopControlObserver).
func (m *Metrics) Observe(e aeiou.Event) {
	l := m.loop
	switch e.Type {
	case aeiou.EventDecision:
		if e.Record != nil {
			l.decisions.WithLabelValues(e.Record.Decision, e.Record.Reason).Inc()
		}
	case aeiou.EventRejected:
		l.ignored.WithLabelValues(string(e.Reason)).Inc()
	case aeiou.EventLint:
		l.lints.WithLabelValues(string(e.Lint)).Inc()
	case aeiou.EventMint:
		l.mints.WithLabelValues("primary").Inc()
	case aeiou.EventMintFallback:
		l.mints.WithLabelValues("fallback").Inc()
	case aeiou.EventMintFailed:
		l.mints.WithLabelValues("failed").Inc()
	}
}
