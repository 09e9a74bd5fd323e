package observe

import (
	"github.com/prometheus/client_golang/prometheus"
)

// LoopEvent is one AEIOU loop-control event as the metrics count it; the
// assembly translates the agents' own events (aeiou.Event) into it, so this
// package stays below the listeners.
type LoopEvent struct {
	// Kind is what happened: "decision", "ignored", "lint", "mint",
	// "mint_fallback" or "mint_failed".
	Kind string
	// Decision and Reason label a decision (continue, done, abort, halt and a
	// halt's code); Reason also says why a token was ignored.
	Decision, Reason string
	// Lint names a raised lint.
	Lint string
}

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

// ObserveLoop counts one AEIOU loop-control event.
func (m *Metrics) ObserveLoop(e LoopEvent) {
	l := m.loop
	switch e.Kind {
	case "decision":
		l.decisions.WithLabelValues(e.Decision, e.Reason).Inc()
	case "ignored":
		l.ignored.WithLabelValues(e.Reason).Inc()
	case "lint":
		l.lints.WithLabelValues(e.Lint).Inc()
	case "mint":
		l.mints.WithLabelValues("primary").Inc()
	case "mint_fallback":
		l.mints.WithLabelValues("fallback").Inc()
	case "mint_failed":
		l.mints.WithLabelValues("failed").Inc()
	}
}
