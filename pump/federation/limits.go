package federation

import (
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// limits are a gateway's bounds on what waits for its peer, with defaults
// applied, and the configured values they came from. A reload that changes
// them swaps them on the running gateway (retune): its link, outbox and
// waiting calls stay.
type limits struct {
	// queueLimit and queueBytes bound the outbox (queue_limit,
	// queue_bytes); callTimeout how long a call waits for the peer's
	// answer (call_timeout). A change applies to the calls queued or
	// opened from then on.
	queueLimit  int
	queueBytes  int
	callTimeout time.Duration
	// configured are gc's values as written (zero: the default).
	configured config.Gateway
}

// limitsOf reads gc's limits.
func limitsOf(gc config.Gateway) *limits {
	queue, timeout := gc.Limits()
	return &limits{queueLimit: queue, queueBytes: gc.QueueByteLimit(), callTimeout: timeout,
		configured: config.Gateway{QueueLimit: gc.QueueLimit, QueueBytes: gc.QueueBytes, CallTimeout: gc.CallTimeout}}
}

// withLimits is gc with the limits of l.
func (l *limits) withLimits(gc config.Gateway) config.Gateway {
	gc.QueueLimit, gc.QueueBytes, gc.CallTimeout = l.configured.QueueLimit, l.configured.QueueBytes, l.configured.CallTimeout
	return gc
}

// callTimeout is how long a call opened now waits for g's peer.
func (g *gateway) callTimeout() time.Duration { return g.limits.Load().callTimeout }

// retune puts gc's limits in force on g: the outbox admits by the new
// bounds from now on, and calls opened from now on wait by the new
// call_timeout (those already waiting keep theirs). An imported
// listener's queue keeps its size until it is registered again.
func (g *gateway) retune(gc config.Gateway) {
	l := limitsOf(gc)
	g.mu.Lock()
	g.limits.Store(l)
	g.mu.Unlock()
	g.wake()
	g.log.Info("federation: gateway limits changed by a reload", "queue_limit", l.queueLimit,
		"queue_bytes", l.queueBytes, "call_timeout", l.callTimeout)
}
