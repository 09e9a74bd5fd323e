package observe

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CallSample is one LLM call as the metrics count it (an
// organism.Call's backend, model, timing, tokens and outcome).
type CallSample struct {
	Backend, Model                 string
	Duration, FirstToken           time.Duration
	PromptTokens, CompletionTokens int
	// Failed says the call did not complete: the backend failed it, or
	// (Aborted) its caller stopped it.
	Failed bool
	// Aborted says the caller stopped the call — an operator's halt,
	// cancel or kill, a reload, shutdown — rather than the backend
	// failing it: counted with the outcome "aborted", not "error".
	Aborted bool
}

// CallFeed subscribes fn to every LLM call the organism makes from now on
// and returns how to stop (a wrapper of organism.Organism.OnCall).
type CallFeed func(fn func(CallSample)) (cancel func())

// Buckets of the LLM call histograms.
var (
	// callSecondsBuckets: 10 ms to about 4 min, ×2.5 each.
	callSecondsBuckets = prometheus.ExponentialBuckets(0.01, 2.5, 12)
	// callTokenBuckets: 16 to 262144 tokens, ×4 each.
	callTokenBuckets = prometheus.ExponentialBuckets(16, 4, 8)
)

// llmCalls is the per-call LLM metrics: one observation per call attempt.
type llmCalls struct {
	calls      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	firstToken *prometheus.HistogramVec
	tokens     *prometheus.HistogramVec
}

func newLLMCalls() *llmCalls {
	labels := []string{"backend", "model"}
	return &llmCalls{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "llm_calls_total",
			Help: "LLM calls (attempts) by backend, model and outcome (ok, error, aborted: its caller stopped it)."},
			[]string{"backend", "model", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace,
			Name: "llm_call_duration_seconds", Help: "How long an LLM call took, waiting for the backend's limits included.",
			Buckets: callSecondsBuckets}, labels),
		firstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace,
			Name: "llm_call_first_token_seconds", Help: "Time from sending a streamed LLM call to its first piece of text.",
			Buckets: callSecondsBuckets}, labels),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace,
			Name: "llm_call_tokens", Help: "Tokens of one LLM call by kind (prompt, completion).",
			Buckets: callTokenBuckets}, []string{"backend", "model", "kind"}),
	}
}

// Describe sends the families' descriptors.
func (l *llmCalls) Describe(ch chan<- *prometheus.Desc) {
	l.calls.Describe(ch)
	l.duration.Describe(ch)
	l.firstToken.Describe(ch)
	l.tokens.Describe(ch)
}

// Collect sends the families' values.
func (l *llmCalls) Collect(ch chan<- prometheus.Metric) {
	l.calls.Collect(ch)
	l.duration.Collect(ch)
	l.firstToken.Collect(ch)
	l.tokens.Collect(ch)
}

// ObserveCall counts one LLM call: llm_calls_total (outcome ok, error, or
// aborted for a call its caller stopped), its duration, its time to the
// first token (streamed calls that got one) and, for a completed call, its
// prompt and completion tokens. Attach makes the metrics a
// subscriber of Sources.Calls; ObserveCall is for a caller that feeds them
// itself.
func (m *Metrics) ObserveCall(c CallSample) {
	l := m.llm
	outcome := "ok"
	switch {
	case c.Aborted:
		outcome = "aborted"
	case c.Failed:
		outcome = "error"
	}
	l.calls.WithLabelValues(c.Backend, c.Model, outcome).Inc()
	l.duration.WithLabelValues(c.Backend, c.Model).Observe(c.Duration.Seconds())
	if c.FirstToken > 0 {
		l.firstToken.WithLabelValues(c.Backend, c.Model).Observe(c.FirstToken.Seconds())
	}
	if !c.Failed && !c.Aborted {
		l.tokens.WithLabelValues(c.Backend, c.Model, "prompt").Observe(float64(c.PromptTokens))
		l.tokens.WithLabelValues(c.Backend, c.Model, "completion").Observe(float64(c.CompletionTokens))
	}
}
