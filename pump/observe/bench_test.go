package observe

import (
	"log/slog"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// BenchmarkObserveStage is one stage timing recorded (what a sampled
// stage costs the pump besides its two clock reads).
func BenchmarkObserveStage(b *testing.B) {
	m := NewMetrics()
	s := pump.StageSample{Stage: pump.StageHandler, Listener: "greeter", Thread: "t", Start: time.Now(), Duration: 3 * time.Microsecond}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveStage(s)
		}
	})
}

// BenchmarkDeliver is one message event counted (in and out).
func BenchmarkDeliver(b *testing.B) {
	p, err := pump.New(pump.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	m := NewMetrics()
	if err := m.Attach(Sources{Pump: p}); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	e := pump.Event{Kind: pump.EventMessage, From: "greeter", Listener: "shouter"}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Deliver(e)
		}
	})
}

// BenchmarkGather is one scrape of every metric (without HTTP).
func BenchmarkGather(b *testing.B) {
	p, err := pump.New(pump.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	m := NewMetrics()
	if err := m.Attach(Sources{Pump: p}); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for b.Loop() {
		if _, err := m.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
