package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestRunMeasuresSomething runs a short bench and checks the result is sane
// (numbers themselves are reported by `xmlpipe bench`, not asserted).
func TestRunMeasuresSomething(t *testing.T) {
	r, err := Run(context.Background(), Config{Duration: 300 * time.Millisecond, Injectors: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Envelopes < 2 || r.EnvelopesPerSec <= 0 || r.P99us <= 0 || r.FloorUs <= 0 || r.FloorRatio <= 0 || r.Floor1CoreUs <= 0 {
		t.Fatalf("implausible result: %+v", r)
	}
	t.Log("\n" + r.String())
}

// TestRunMetricsAB runs a short metrics A/B: both pumps carry envelopes and
// the pump with metrics was scraped.
func TestRunMetricsAB(t *testing.T) {
	r, err := Run(context.Background(), Config{Duration: 400 * time.Millisecond, Injectors: 2, MetricsAB: true,
		ScrapeEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.MetricsOnPerSec <= 0 || r.MetricsOffPerSec <= 0 || r.MetricsRatio <= 0 || r.MetricsScrapes == 0 {
		t.Fatalf("implausible metrics A/B: %+v", r)
	}
	t.Log("\n" + r.String())
}

// TestMetricsABRefusesAJournal: the two pumps must differ in their metrics
// only.
func TestMetricsABRefusesAJournal(t *testing.T) {
	_, err := Run(context.Background(), Config{Duration: 100 * time.Millisecond, MetricsAB: true, JournalAB: true,
		Journal: pump.JournalFunc(func(pump.Record) {})})
	if !errors.Is(err, ErrMetricsAB) {
		t.Fatalf("MetricsAB with a journal: %v, want ErrMetricsAB", err)
	}
}
