package observe

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// GatewayStatus is the federation manager's view of its gateways (a
// *federation.Manager), read at scrape time.
type GatewayStatus interface {
	Status() []federation.GatewayStatus
}

// callBuckets are the federated call round-trip histogram's upper bounds
// in seconds: 1 ms to about 4 min, ×4 each.
var callBuckets = prometheus.ExponentialBuckets(1e-3, 4, 10)

// Descriptors of the gateway families read from the manager's status.
var (
	descGatewayUp     = newDesc("gateway_up", "1 while the gateway's link to its peer is up and authenticated.", "gateway")
	descGatewayQueued = newDesc("gateway_queued", "Envelopes waiting for the peer's acknowledgement.", "gateway")
)

// gateways is the federation's metrics: envelopes, refusals and call round
// trips counted as the federation's Observer, link state and queue read
// from the manager's status at scrape time.
type gateways struct {
	envelopes *prometheus.CounterVec
	refused   *prometheus.CounterVec
	calls     *prometheus.HistogramVec
	// status is the manager (nil without gateways).
	status atomic.Pointer[GatewayStatus]
}

func newGateways() *gateways {
	return &gateways{
		envelopes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "gateway_envelopes_total",
			Help: "Federated envelopes by gateway, direction (in: accepted from the peer, out: queued for it) and kind."},
			[]string{"gateway", "direction", "kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "gateway_refused_total",
			Help: "Federated envelopes and links refused, by gateway and reason (by-peer: the peer refused ours)."},
			[]string{"gateway", "reason"}),
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "gateway_call_seconds",
			Help:    "Round trip of the answered calls through the gateway, from queueing the call to its answer.",
			Buckets: callBuckets}, []string{"gateway"}),
	}
}

// Describe sends the gateway families' descriptors.
func (g *gateways) Describe(ch chan<- *prometheus.Desc) {
	g.envelopes.Describe(ch)
	g.refused.Describe(ch)
	g.calls.Describe(ch)
	ch <- descGatewayUp
	ch <- descGatewayQueued
}

// Collect sends the counters and, when a manager is attached, each
// gateway's link state and queue.
func (g *gateways) Collect(ch chan<- prometheus.Metric) {
	g.envelopes.Collect(ch)
	g.refused.Collect(ch)
	g.calls.Collect(ch)
	s := g.status.Load()
	if s == nil {
		return
	}
	for _, st := range (*s).Status() {
		up := 0.0
		if st.Connected {
			up = 1
		}
		ch <- gauge(descGatewayUp, up, st.Name)
		ch <- gauge(descGatewayQueued, float64(st.Queued), st.Name)
	}
}

var _ federation.Observer = (*Metrics)(nil)

// Envelope counts one federated envelope in gateway_envelopes_total. With
// Refused and RoundTrip it makes the metrics the federation's Observer
// (organism.Options.GatewayObserver).
func (m *Metrics) Envelope(gateway, direction string, kind federation.Kind) {
	m.gateways.envelopes.WithLabelValues(gateway, direction, string(kind)).Inc()
}

// Refused counts one refusal in gateway_refused_total.
func (m *Metrics) Refused(gateway, reason string) {
	m.gateways.refused.WithLabelValues(gateway, reason).Inc()
}

// RoundTrip records one answered call in gateway_call_seconds.
func (m *Metrics) RoundTrip(gateway string, d time.Duration) {
	m.gateways.calls.WithLabelValues(gateway).Observe(d.Seconds())
}
