package observe

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// namespace prefixes every metric name.
const namespace = "xmlpipe"

// ErrAttached is returned by Attach when the metrics already watch a pump.
var ErrAttached = errors.New("observe: metrics already attached to a pump")

// stageBuckets are the stage latency histogram's upper bounds in seconds:
// 5 µs to about 21 s, ×4 each.
var stageBuckets = prometheus.ExponentialBuckets(5e-6, 4, 12)

// SampleEvery is the pump's ObserveEvery for the metrics: one stage
// timing in SampleEvery is observed, which keeps the metrics' cost to the
// pump under 3 % of its throughput. The stage histograms are then a random
// sample: their _count is the number of timings observed, not of messages
// (envelopes_in_total and the other counters count every message).
const SampleEvery = 8

// JournalStats is the store's writer statistics (a *store.Store).
type JournalStats interface {
	Stats() store.Stats
	Backlog() store.Backlog
}

// Sources are what Metrics reads at scrape time. Pump is required; the
// others are optional.
type Sources struct {
	Pump *pump.Pump
	// Journal is the organism's store (nil for an in-memory organism).
	Journal JournalStats
	// LLM is the organism's LLM router (nil without backends).
	LLM UsageSource
	// Gateways is the organism's federation manager (nil without
	// gateways).
	Gateways GatewayStatus
	// Calls delivers the organism's LLM calls (nil: the per-call
	// families stay empty).
	Calls CallFeed
}

// Metrics is the organism's Prometheus metrics. Build it with NewMetrics,
// hand it to the pump as its StageObserver (organism.Options.Observer),
// then Attach the built organism's sources and serve Handler.
type Metrics struct {
	reg *prometheus.Registry

	stages *prometheus.HistogramVec
	// stageObs caches the histogram of each listener, one map per
	// pump.Stage (read, validate, handler): listener name →
	// prometheus.Observer.
	stageObs [3]sync.Map
	// handlerNanos and handlerCount total the handler timings observed, as
	// stage_duration_seconds{stage="handler"} does over its listeners
	// (HandlerLatency).
	handlerNanos, handlerCount atomic.Int64

	flow     *flow
	scraper  *scraper
	gateways *gateways
	llm      *llmCalls
	gov      *governance
	loop     *loopControl

	cancelWatch func()
	cancelCalls func()
	attached    atomic.Bool
}

// NewMetrics builds the metrics with their registry (the Go runtime and
// process collectors included).
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.stages = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "stage_duration_seconds",
		Help:    "How long a pump stage took per message: read (parse, repair, C14N, envelope check), validate (payload schema), handler.",
		Buckets: stageBuckets}, []string{"stage", "listener"})
	m.flow = newFlow()
	m.scraper = &scraper{}
	m.gateways = newGateways()
	m.llm = newLLMCalls()
	m.gov = newGovernance()
	m.loop = newLoopControl()
	m.reg.MustRegister(m.stages, m.flow, m.scraper, m.gateways, m.llm, m.gov.decisions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.loop.collectors()...)
	return m
}

// Attach starts reading src at scrape time and counting the pump's events.
// It may be called once; Close stops the event counting.
func (m *Metrics) Attach(src Sources) error {
	if src.Pump == nil {
		return errors.New("observe: Sources.Pump is required")
	}
	if !m.attached.CompareAndSwap(false, true) {
		return ErrAttached
	}
	m.flow.pump = src.Pump
	m.scraper.src.Store(&src)
	if src.Gateways != nil {
		m.gateways.status.Store(&src.Gateways)
	}
	m.cancelWatch = src.Pump.Watch(m)
	if src.Calls != nil {
		m.cancelCalls = src.Calls(m.ObserveCall)
	}
	return nil
}

// Deliver counts one pump event (envelopes in and out, <huh> reasons,
// failures, completions). Attach makes the metrics a watcher of the pump;
// Deliver is for a caller that manages the watch itself.
func (m *Metrics) Deliver(e pump.Event) { m.flow.Deliver(e) }

// CountConnections makes bus_connections read n at scrape time (the main
// bus calls it with its connection count).
func (m *Metrics) CountConnections(n func() int) { m.scraper.conns.Store(&n) }

// Close stops counting the pump's events and the LLM calls (scrapes keep
// working).
func (m *Metrics) Close() {
	if m.cancelWatch != nil {
		m.cancelWatch()
	}
	if m.cancelCalls != nil {
		m.cancelCalls()
	}
}

// Registry returns the registry the metrics are registered with (to add
// collectors or Gather in tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text (or negotiated) format.
// It does not authenticate: the bus guards it.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveStage records one stage timing in stage_duration_seconds. It is the
// pump's StageObserver.
func (m *Metrics) ObserveStage(s pump.StageSample) {
	if int(s.Stage) >= len(m.stageObs) {
		return
	}
	cache := &m.stageObs[s.Stage]
	o, ok := cache.Load(s.Listener)
	if !ok {
		o, _ = cache.LoadOrStore(s.Listener, m.stages.WithLabelValues(s.Stage.String(), s.Listener))
	}
	o.(prometheus.Observer).Observe(s.Duration.Seconds())
	if s.Stage == pump.StageHandler {
		m.handlerNanos.Add(int64(s.Duration))
		m.handlerCount.Add(1)
	}
}

// HandlerLatency returns the sum and count of the handler timings observed
// so far — stage_duration_seconds{stage="handler"}'s sum and count over
// every listener — so a client polling it gets the mean handler latency of
// each interval from the differences.
func (m *Metrics) HandlerLatency() (sum time.Duration, count int64) {
	return time.Duration(m.handlerNanos.Load()), m.handlerCount.Load()
}
