package observe

import "github.com/xml-pipeline/xmlpipe/pump"

// Observers is a StageObserver that hands every sample to each of its
// elements in order (the metrics and the tracer share the pump's one
// observer).
type Observers []pump.StageObserver

// ObserveStage calls every observer.
func (o Observers) ObserveStage(s pump.StageSample) {
	for _, x := range o {
		x.ObserveStage(s)
	}
}
