package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
)

// ErrMetricsAB is returned for a run that asks for both A/B comparisons.
var ErrMetricsAB = errors.New("bench: the metrics A/B and the journal A/B cannot run together")

// defaultScrapeEvery is the metrics A/B's scrape interval.
const defaultScrapeEvery = 100 * time.Millisecond

// metricsSlices is how many slices the metrics A/B has (a multiple of 4,
// ABBA): more than the journal's, because the machine's noise is larger
// than what the metrics cost and only many short alternations average it
// out.
const metricsSlices = 32

// metricsGate is the bench pump's metrics, switched on and off per slice:
// while off, the pump has no metrics watcher and its stage observer
// returns at once (the pump still reads the clock for the sampled stages,
// two reads per SampleEvery stages).
type metricsGate struct {
	m       *observe.Metrics
	p       *pump.Pump
	on      atomic.Bool
	scrapes atomic.Int64
	cancel  func()
}

// ObserveStage passes s to the metrics while the gate is on.
func (g *metricsGate) ObserveStage(s pump.StageSample) {
	if g.on.Load() {
		g.m.ObserveStage(s)
	}
}

// attach makes the metrics read p at scrape time, without watching it yet.
func (g *metricsGate) attach(p *pump.Pump) error {
	if err := g.m.Attach(observe.Sources{Pump: p}); err != nil {
		return err
	}
	g.m.Close() // the gate watches the pump itself, in on slices only
	g.p = p
	return nil
}

// set turns the metrics on (watching the pump, observing stages) or off.
func (g *metricsGate) set(on bool) {
	if on == g.on.Load() {
		return
	}
	if on {
		g.cancel = g.p.Watch(g.m)
	} else {
		g.cancel()
	}
	g.on.Store(on)
}

// scrapeFor gathers every metric every interval for d (or until ctx ends),
// as a Prometheus server's scrapes do.
func (g *metricsGate) scrapeFor(ctx context.Context, d, every time.Duration) error {
	end := time.NewTimer(d)
	defer end.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-end.C:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := g.m.Registry().Gather(); err != nil {
				return err
			}
			g.scrapes.Add(1)
		}
	}
}

// metricsAB runs the throughput phase as metricsSlices slices with the
// metrics on in ABBA order (on, off, off, on, …) while the injectors run
// throughout; an on slice is scraped every scrapeEvery. It returns the
// totals of the on and off slices.
func (f *flow) metricsAB(ctx context.Context, d time.Duration, g *metricsGate, scrapeEvery time.Duration) (on, off slice, err error) {
	if scrapeEvery <= 0 {
		scrapeEvery = defaultScrapeEvery
	}
	defer g.set(false)
	per := d / metricsSlices
	for k := range metricsSlices {
		metrics := abOn(k)
		g.set(metrics)
		sunk0, cpu0, t0 := f.sunk.Load(), cpuTime(), time.Now()
		if metrics {
			err = g.scrapeFor(ctx, per, scrapeEvery)
		} else {
			select {
			case <-time.After(per):
			case <-ctx.Done():
			}
		}
		if err := errors.Join(err, ctx.Err()); err != nil {
			return on, off, err
		}
		s := slice{envelopes: 2 * (f.sunk.Load() - sunk0), wall: time.Since(t0), cpu: cpuTime() - cpu0}
		acc := &off
		if metrics {
			acc = &on
		}
		acc.envelopes += s.envelopes
		acc.wall += s.wall
		acc.cpu += s.cpu
	}
	return on, off, nil
}
