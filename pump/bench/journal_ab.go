package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// journalGate passes records to a journal only while it is on. Delivery
// marks always pass: a message journaled while the gate was on is marked
// delivered even if it is handled after the gate closed.
type journalGate struct {
	to pump.Journal
	on atomic.Bool
}

// Record journals r while the gate is on.
func (g *journalGate) Record(r pump.Record) {
	if g.on.Load() {
		g.to.Record(r)
	}
}

// RecordSeq journals r while the gate is on and returns its seq; 0 (not
// journaled) while it is off.
func (g *journalGate) RecordSeq(r pump.Record) int64 {
	if !g.on.Load() {
		return 0
	}
	if sj, ok := g.to.(pump.SeqJournal); ok {
		return sj.RecordSeq(r)
	}
	g.to.Record(r)
	return 0
}

// Delivered forwards a delivery mark.
func (g *journalGate) Delivered(seq int64) {
	if dj, ok := g.to.(pump.DeliveryJournal); ok {
		dj.Delivered(seq)
	}
}

// abSlices is how many slices the A/B throughput phase has (a multiple of
// 4: the ABBA order cancels a linear drift of the machine's speed).
const abSlices = 8

// abOn reports whether A/B slice k journals: on, off, off, on, on, off, ….
func abOn(k int) bool { return k%4 == 0 || k%4 == 3 }

// slice is what one A/B slice measured.
type slice struct {
	envelopes int64
	wall, cpu time.Duration
}

// journalAB runs the throughput phase as abSlices slices, the journal on in
// slices ABBA-ordered (on, off, off, on, …), while the injectors run
// throughout. An on slice followed by an off slice (and the last slice)
// ends only once the journal has committed what it queued (flush, the gate
// already closed): the writer's backlog is counted against the on slice
// that made it, not against the off slice and not left out. It returns the
// totals of the on and off slices.
func (f *flow) journalAB(ctx context.Context, d time.Duration, g *journalGate, flush func(context.Context) error) (on, off slice, err error) {
	per := d / abSlices
	for k := range abSlices {
		journal := abOn(k)
		g.on.Store(journal)
		sunk0, cpu0, t0 := f.sunk.Load(), cpuTime(), time.Now()
		select {
		case <-time.After(per):
		case <-ctx.Done():
			return on, off, ctx.Err()
		}
		if journal && (k == abSlices-1 || !abOn(k+1)) && flush != nil {
			g.on.Store(false)
			if err := flush(ctx); err != nil {
				return on, off, err
			}
		}
		s := slice{envelopes: 2 * (f.sunk.Load() - sunk0), wall: time.Since(t0), cpu: cpuTime() - cpu0}
		acc := &off
		if journal {
			acc = &on
		}
		acc.envelopes += s.envelopes
		acc.wall += s.wall
		acc.cpu += s.cpu
	}
	g.on.Store(true)
	return on, off, nil
}

// perSec is s's throughput.
func (s slice) perSec() float64 {
	if s.wall <= 0 {
		return 0
	}
	return float64(s.envelopes) / s.wall.Seconds()
}

// cpuPerEnvelopeUs is s's CPU time per envelope in µs.
func (s slice) cpuPerEnvelopeUs() float64 {
	if s.envelopes == 0 {
		return 0
	}
	return float64(s.cpu.Microseconds()) / float64(s.envelopes)
}
