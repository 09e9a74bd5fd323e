package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
)

// ErrMetricsAB is returned for a MetricsAB run that also journals: the two
// pumps of its A/B must differ in their metrics only.
var ErrMetricsAB = errors.New("bench: the metrics A/B runs without a journal or persisted registries")

// defaultScrapeEvery is the metrics A/B's scrape interval.
const defaultScrapeEvery = 100 * time.Millisecond

// metricsFlow is the bench flow with the organism's metrics: its pump's
// stage observer and watcher, attached to its pump as `xmlpipe run` does.
type metricsFlow struct {
	*flow
	m       *observe.Metrics
	scrapes atomic.Int64
}

// newMetricsFlow builds the flow with metrics.
func newMetricsFlow(cfg Config) (*metricsFlow, error) {
	if cfg.Journal != nil || cfg.JournalAB || cfg.Threads != nil || cfg.Todos != nil || cfg.Context != nil {
		return nil, ErrMetricsAB
	}
	m := observe.NewMetrics()
	f, err := newFlow(cfg, m)
	if err != nil {
		return nil, err
	}
	if err := m.Attach(observe.Sources{Pump: f.p}); err != nil {
		_ = f.p.Shutdown(context.Background())
		return nil, err
	}
	return &metricsFlow{flow: f, m: m}, nil
}

// close stops the metrics and the pump.
func (mf *metricsFlow) close() {
	mf.m.Close()
	_ = mf.p.Shutdown(context.Background())
}

// scrape gathers every metric once, as a Prometheus scrape does.
func (mf *metricsFlow) scrape() error {
	if _, err := mf.m.Registry().Gather(); err != nil {
		return err
	}
	mf.scrapes.Add(1)
	return nil
}

// metricsAB runs the throughput phase as abSlices slices, the injectors
// (which run throughout) feeding the pump with metrics in ABBA-ordered
// slices (on, off, off, on, …) and plain in the others, through target.
// While an on slice runs, the metrics are scraped every scrapeEvery.
// sunk counts the conversations both flows completed. It returns the
// totals of the on and off slices.
func (mf *metricsFlow) metricsAB(ctx context.Context, d time.Duration, plain *pump.Pump, target *atomic.Pointer[pump.Pump],
	sunk func() int64, scrapeEvery time.Duration) (on, off slice, err error) {
	if scrapeEvery <= 0 {
		scrapeEvery = defaultScrapeEvery
	}
	per := d / abSlices
	for k := range abSlices {
		metrics := abOn(k)
		p := plain
		if metrics {
			p = mf.p
		}
		target.Store(p)
		sunk0, cpu0, t0 := sunk(), cpuTime(), time.Now()
		var serr error
		if metrics {
			serr = mf.scrapeFor(ctx, per, scrapeEvery)
		} else {
			select {
			case <-time.After(per):
			case <-ctx.Done():
			}
		}
		if err := errors.Join(serr, ctx.Err()); err != nil {
			return on, off, err
		}
		s := slice{envelopes: 2 * (sunk() - sunk0), wall: time.Since(t0), cpu: cpuTime() - cpu0}
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

// scrapeFor scrapes every interval for d (or until ctx ends).
func (mf *metricsFlow) scrapeFor(ctx context.Context, d, every time.Duration) error {
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
			if err := mf.scrape(); err != nil {
				return err
			}
		}
	}
}
