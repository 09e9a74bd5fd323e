package main

import (
	"github.com/xml-pipeline/xmlpipe/pump/observe"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// observedBuild is build with the organism's metrics as its pump's stage
// observer when organism.yaml's observability.metrics.enabled holds; *m is
// then set to them (else left nil).
func observedBuild(src configSource, build func(organism.Options) (*organism.Organism, error),
	m **observe.Metrics) func(organism.Options) (*organism.Organism, error) {
	return func(opts organism.Options) (*organism.Organism, error) {
		*m = nil
		cfg, err := src.load()
		if err != nil {
			return nil, err
		}
		if cfg.Observability.Metrics.Enabled {
			*m = observe.NewMetrics()
			opts.Observer, opts.ObserveEvery = *m, observe.SampleEvery
		}
		return build(opts)
	}
}

// metricsFor returns the metrics the main bus serves for the started
// organism o, attached to its pump, store and LLM router: built is the
// metrics observedBuild made (nil when the organism was built without, as
// by the console: its stage latencies are then not measured). Nil when
// observability.metrics.enabled is false.
func metricsFor(o *organism.Organism, built *observe.Metrics) (*observe.Metrics, error) {
	if !o.Config.Observability.Metrics.Enabled {
		return nil, nil
	}
	m := built
	if m == nil {
		m = observe.NewMetrics()
	}
	src := observe.Sources{Pump: o.Pump}
	if st := o.Store(); st != nil {
		src.Journal = st
	}
	if o.LLM != nil {
		src.LLM = o.LLM
	}
	if err := m.Attach(src); err != nil {
		return nil, err
	}
	return m, nil
}
