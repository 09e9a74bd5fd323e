package observe

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// maxReasons bounds the distinct huh_total reasons; later ones count as
// "other" (a canned text is one of a few, but a metric's label set must
// stay bounded whatever a failure says).
const maxReasons = 32

// flow counts the pump's events as a watcher: envelopes in and out per
// listener, <huh> by reason, other failures by kind, completed
// conversations. Its counters are plain atomics in maps that only grow, so
// Deliver takes no lock once a name has been seen; Collect turns them into
// constant metrics.
type flow struct {
	pump *pump.Pump

	in, out  counterMap // listener name → count
	huh      counterMap // reason → count
	failures counterMap // event kind → count
	complete atomic.Int64

	descIn, descOut, descHuh, descFail, descComplete *prometheus.Desc
}

func newFlow() *flow {
	return &flow{
		descIn: prometheus.NewDesc(namespace+"_envelopes_in_total",
			"Envelopes accepted and delivered to the listener.", []string{"listener"}, nil),
		descOut: prometheus.NewDesc(namespace+"_envelopes_out_total",
			"Envelopes the listener emitted (messages to listeners and replies leaving the organism).", []string{"listener"}, nil),
		descHuh: prometheus.NewDesc(namespace+"_huh_total",
			"<huh> failures by their canned text.", []string{"reason"}, nil),
		descFail: prometheus.NewDesc(namespace+"_failures_total",
			"SystemError and dead-letter events.", []string{"kind"}, nil),
		descComplete: prometheus.NewDesc(namespace+"_conversations_completed_total",
			"Conversations that finished (nothing of them in flight any more).", nil, nil),
	}
}

// Deliver counts one event.
func (f *flow) Deliver(e pump.Event) {
	switch e.Kind {
	case pump.EventMessage:
		f.in.add(e.Listener, 0)
		f.countOut(e.From)
	case pump.EventReply:
		f.countOut(e.From)
	case pump.EventHuh:
		f.huh.add(e.Error, maxReasons)
	case pump.EventSystemError, pump.EventDeadLetter:
		f.failures.add(string(e.Kind), 0)
	case pump.EventComplete:
		f.complete.Add(1)
	}
}

// countOut counts an envelope emitted by from when from is a listener
// (external senders are not listeners and are not counted).
func (f *flow) countOut(from string) {
	if c := f.out.get(from); c != nil {
		c.Add(1)
		return
	}
	if _, ok := f.pump.Lookup(from); ok {
		f.out.add(from, 0)
	}
}

// Describe sends the flow's descriptors.
func (f *flow) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.descIn
	ch <- f.descOut
	ch <- f.descHuh
	ch <- f.descFail
	ch <- f.descComplete
}

// Collect sends the current counts.
func (f *flow) Collect(ch chan<- prometheus.Metric) {
	f.in.collect(ch, f.descIn)
	f.out.collect(ch, f.descOut)
	f.huh.collect(ch, f.descHuh)
	f.failures.collect(ch, f.descFail)
	ch <- prometheus.MustNewConstMetric(f.descComplete, prometheus.CounterValue, float64(f.complete.Load()))
}

// counterMap is a grow-only map of names to counters: lookups of a known
// name take no lock.
type counterMap struct {
	m  sync.Map // string → *paddedCounter
	mu sync.Mutex
	n  int
}

// paddedCounter is a counter alone on its cache line: counters that
// different cores increment never share one (no false sharing).
type paddedCounter struct {
	atomic.Int64
	_ [56]byte
}

// get returns the counter of name, nil if none yet.
func (c *counterMap) get(name string) *paddedCounter {
	if v, ok := c.m.Load(name); ok {
		return v.(*paddedCounter)
	}
	return nil
}

// add counts one for name; with limit > 0, names past the limit-th count
// as "other".
func (c *counterMap) add(name string, limit int) {
	if v := c.get(name); v != nil {
		v.Add(1)
		return
	}
	c.mu.Lock()
	if limit > 0 && c.n >= limit-1 {
		name = "other"
	}
	v, loaded := c.m.LoadOrStore(name, new(paddedCounter))
	if !loaded {
		c.n++
	}
	c.mu.Unlock()
	v.(*paddedCounter).Add(1)
}

// collect sends one constant counter per name.
func (c *counterMap) collect(ch chan<- prometheus.Metric, d *prometheus.Desc) {
	c.m.Range(func(k, v any) bool {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v.(*paddedCounter).Load()), k.(string))
		return true
	})
}
