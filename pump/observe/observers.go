package observe

import (
	"context"

	"github.com/xml-pipeline/xmlpipe/pump"
)

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

// HandlerContext passes ctx through every observer that is a
// pump.HandlerContexter, in order.
func (o Observers) HandlerContext(ctx context.Context, listener, thread string) context.Context {
	for _, x := range o {
		if hc, ok := x.(pump.HandlerContexter); ok {
			ctx = hc.HandlerContext(ctx, listener, thread)
		}
	}
	return ctx
}
