package bench

import (
	"slices"
	"sync/atomic"
	"time"
)

// probe records the two ingress→handler latencies of each conversation of
// the latency phase without locks: the injector stores the time it hands
// conversation seq to the pump, the shouter the time its handler starts and
// the time it emits, the sink the time its handler starts. A mutex-guarded
// map here used to serialise every handler of the flow on one lock, so a
// descheduled holder stalled the whole pump and the bench measured itself.
type probe struct {
	base    int64          // seq of the first recorded conversation
	sent    []atomic.Int64 // unix ns when the conversation was injected
	emitted []atomic.Int64 // unix ns when the shouter's handler returned
	hop1    []atomic.Int64 // ns from inject to the shouter's handler
	hop2    []atomic.Int64 // ns from the shouter's emit to the sink's handler
}

// newProbe makes room for n conversations starting at seq base.
func newProbe(base int64, n int) *probe {
	return &probe{base: base, sent: make([]atomic.Int64, n), emitted: make([]atomic.Int64, n),
		hop1: make([]atomic.Int64, n), hop2: make([]atomic.Int64, n)}
}

// slot returns the index of conversation seq, or -1 when it is not recorded.
func (p *probe) slot(seq int64) int {
	if p == nil {
		return -1
	}
	i := seq - p.base
	if i < 0 || i >= int64(len(p.sent)) {
		return -1
	}
	return int(i)
}

// injected records that conversation seq is being handed to the pump.
func (p *probe) injected(seq int64) {
	if i := p.slot(seq); i >= 0 {
		p.sent[i].Store(time.Now().UnixNano())
	}
}

// shouting records the shouter's handler starting on conversation seq.
func (p *probe) shouting(seq int64) {
	if i := p.slot(seq); i >= 0 {
		if t0 := p.sent[i].Load(); t0 != 0 {
			p.hop1[i].Store(max(time.Now().UnixNano()-t0, 1))
		}
	}
}

// shouted records the shouter's handler returning on conversation seq.
func (p *probe) shouted(seq int64) {
	if i := p.slot(seq); i >= 0 {
		p.emitted[i].Store(time.Now().UnixNano())
	}
}

// sunk records the sink's handler starting on conversation seq.
func (p *probe) sunk(seq int64) {
	if i := p.slot(seq); i >= 0 {
		if t1 := p.emitted[i].Load(); t1 != 0 {
			p.hop2[i].Store(max(time.Now().UnixNano()-t1, 1))
		}
	}
}

// latencies returns every recorded hop latency, sorted.
func (p *probe) latencies() []time.Duration {
	out := make([]time.Duration, 0, 2*len(p.hop1))
	for i := range p.hop1 {
		if v := p.hop1[i].Load(); v > 0 {
			out = append(out, time.Duration(v))
		}
		if v := p.hop2[i].Load(); v > 0 {
			out = append(out, time.Duration(v))
		}
	}
	slices.Sort(out)
	return out
}
