package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// tracerShutdownTimeout bounds the flush of the last spans at shutdown.
const tracerShutdownTimeout = 5 * time.Second

// observers are what one generation of `xmlpipe run` observes its organism
// with (each nil when off).
type observers struct {
	metrics *observe.Metrics
	tracer  *observe.Tracer
}

// observedBuild is build with the observability: section applied: the
// organism's metrics (observability.metrics.enabled; stage timings
// sampled, one in observe.SampleEvery) and its tracer
// (observability.traces.enabled; every stage timed, spans exported over
// OTLP) become its pump's stage observers, the tracer watching it before it
// starts; the metrics also count what its gateways carry, and the tracer
// continues federated callers' traces. obs is set to them.
func observedBuild(src configSource, build func(organism.Options) (*organism.Organism, error),
	obs *observers) func(organism.Options) (*organism.Organism, error) {
	return func(opts organism.Options) (*organism.Organism, error) {
		*obs = observers{}
		cfg, err := src.load()
		if err != nil {
			return nil, err
		}
		var list observe.Observers
		if cfg.Observability.Metrics.Enabled {
			obs.metrics = observe.NewMetrics()
			list = append(list, obs.metrics)
			opts.GatewayObserver = obs.metrics
			opts.GovernanceObserver = obs.metrics
			opts.LoopControlObserver = loopObserver(obs.metrics)
			opts.ObserveEvery = observe.SampleEvery
		}
		if tc := cfg.Observability.Traces; tc.Enabled {
			exp, err := observe.OTLPExporter(context.Background(), tc.OTLPEndpoint, tc.OTLPInsecure)
			if err != nil {
				return nil, err
			}
			exportErrorsTo(opts.Logger)
			obs.tracer = observe.NewTracer(cfg.Organism.Name, exp, false)
			list = append(list, obs.tracer)
			opts.GatewayTraces = obs.tracer
			opts.ObserveEvery = 1
		}
		switch len(list) {
		case 0:
		case 1:
			opts.Observer = list[0]
		default:
			opts.Observer = list
		}
		o, err := build(opts)
		if err != nil {
			obs.shutdownTracer(nil)
			return nil, err
		}
		if obs.tracer != nil {
			obs.tracer.Attach(o.Pump)
		}
		return o, nil
	}
}

// exportErrorsTo makes log (slog's default when nil) the log of
// OpenTelemetry's own errors — a span batch the collector refused, or could
// not be reached for — as warnings, in the organism's log format, instead of
// the standard logger's plain line on stderr. The handler is process-wide:
// the last organism built with traces on logs them.
func exportErrorsTo(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("traces: OpenTelemetry error", "error", err)
	}))
}

// shutdownTracer flushes and stops the tracer (after the organism's
// shutdown), logging a failure to log when set.
func (obs *observers) shutdownTracer(log *slog.Logger) {
	if obs.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracerShutdownTimeout)
	defer cancel()
	if err := obs.tracer.Shutdown(ctx); err != nil && log != nil {
		log.Warn("tracer shutdown", "error", err)
	}
	obs.tracer = nil
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
	if r := o.LLM; r != nil {
		src.LLM = observe.UsageFunc(func() observe.UsageReport {
			u := r.Usage()
			return observe.UsageReport{Agents: usageOf(u.Agents), Backends: usageOf(u.Backends)}
		})
	}
	if o.Federation != nil {
		src.Gateways = o.Federation
	}
	src.Calls = func(fn func(observe.CallSample)) func() {
		return o.OnCall(func(c organism.Call) { fn(callSampleOf(c)) })
	}
	if err := m.Attach(src); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}

// callSampleOf is the metrics' form of an LLM call: a call its caller
// stopped (Call.Outcome aborted) is counted as aborted, not as an error.
func callSampleOf(c organism.Call) observe.CallSample {
	return observe.CallSample{Backend: c.Backend, Model: c.Model, Duration: c.Duration, FirstToken: c.FirstToken,
		PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Failed: c.Error != "",
		Aborted: c.Outcome() == organism.OutcomeAborted}
}

// usageOf copies the LLM router's usage counts into the metrics' own type.
func usageOf(m map[string]llm.Usage) map[string]observe.Usage {
	out := make(map[string]observe.Usage, len(m))
	for k, u := range m {
		out[k] = observe.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Requests: u.Requests}
	}
	return out
}

// loopObserver hands the agents' AEIOU loop-control events to the metrics in
// the metrics' own terms (pump/observe does not import the listeners).
func loopObserver(m *observe.Metrics) aeiou.Observer {
	return aeiou.ObserverFunc(func(e aeiou.Event) { m.ObserveLoop(loopEventOf(e)) })
}

// loopEventOf translates one aeiou.Event into an observe.LoopEvent.
func loopEventOf(e aeiou.Event) observe.LoopEvent {
	switch e.Type {
	case aeiou.EventDecision:
		if e.Record == nil {
			return observe.LoopEvent{}
		}
		return observe.LoopEvent{Kind: "decision", Decision: e.Record.Decision, Reason: e.Record.Reason}
	case aeiou.EventRejected:
		return observe.LoopEvent{Kind: "ignored", Reason: string(e.Reason)}
	case aeiou.EventLint:
		return observe.LoopEvent{Kind: "lint", Lint: string(e.Lint)}
	case aeiou.EventMint:
		return observe.LoopEvent{Kind: "mint"}
	case aeiou.EventMintFallback:
		return observe.LoopEvent{Kind: "mint_fallback"}
	case aeiou.EventMintFailed:
		return observe.LoopEvent{Kind: "mint_failed"}
	}
	return observe.LoopEvent{}
}
