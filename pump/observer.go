package pump

import (
	"context"
	"math/rand/v2"
	"time"
)

// Stage names a timed step of a message's way through the pump.
type Stage uint8

// Timed stages.
const (
	// StageRead is the envelope stages of one Ingress.Read: parse (and
	// repair), exclusive C14N and envelope validation, which libxml2 runs
	// as one pass over the document.
	StageRead Stage = iota
	// StageValidate is the payload's schema validation against its first
	// target listener.
	StageValidate
	// StageHandler is one handler call.
	StageHandler
	numStages
)

// stageNames are the Stage strings, indexed by Stage.
var stageNames = [numStages]string{"read", "validate", "handler"}

// String returns the stage's name: read, validate or handler.
func (s Stage) String() string {
	if s < numStages {
		return stageNames[s]
	}
	return "unknown"
}

// Stages lists every timed stage.
func Stages() []Stage { return []Stage{StageRead, StageValidate, StageHandler} }

// StageSample is how long one stage took for one message.
type StageSample struct {
	Stage Stage
	// Listener is the listener the stage ran for ("" for StageRead, which
	// runs before routing).
	Listener string
	// Thread is the message's thread ("" when StageRead failed).
	Thread string
	// Start is when the stage began and Duration how long it ran.
	Start    time.Time
	Duration time.Duration
	// Failed reports that the stage rejected the message or the handler
	// failed.
	Failed bool
	// Interrupted reports a handler call Halt cut short: its message went
	// back to the listener's queue and is handled again after Unhalt (a
	// second StageHandler sample for the same message, listener and
	// thread) — or one the organism's stop ended (ErrStopping), whose
	// journaled message is handled again after the restart.
	Interrupted bool
}

// StageObserver sees the timing of the stages of the messages
// (Options.Observer): of every one, or of a random one in
// Options.ObserveEvery. ObserveStage runs on the pump's hot path, on the
// goroutine that ran the stage: it must be cheap and never block.
type StageObserver interface {
	ObserveStage(StageSample)
}

// StageObserverFunc adapts a function to StageObserver.
type StageObserverFunc func(StageSample)

// ObserveStage calls f.
func (f StageObserverFunc) ObserveStage(s StageSample) { f(s) }

// stageStart returns the start time of a stage, or the zero time when no
// observer is set or this stage is not sampled (the clock is then never
// read).
func (p *Pump) stageStart() time.Time {
	if p.opts.Observer == nil {
		return time.Time{}
	}
	if n := p.opts.ObserveEvery; n > 1 && rand.Uint32()%uint32(n) != 0 {
		return time.Time{}
	}
	return time.Now()
}

// stageEnd reports a stage that began at start (zero: no observer).
func (p *Pump) stageEnd(st Stage, listener, thread string, start time.Time, failed bool) {
	if start.IsZero() {
		return
	}
	p.opts.Observer.ObserveStage(StageSample{Stage: st, Listener: listener, Thread: thread, Start: start,
		Duration: time.Since(start), Failed: failed})
}

// handlerEnd reports a handler call that began at start (zero: no
// observer); interrupted says Halt or the stop cut it short
// (StageSample.Interrupted).
func (p *Pump) handlerEnd(listener, thread string, start time.Time, failed, interrupted bool) {
	if start.IsZero() {
		return
	}
	p.opts.Observer.ObserveStage(StageSample{Stage: StageHandler, Listener: listener, Thread: thread, Start: start,
		Duration: time.Since(start), Failed: failed, Interrupted: interrupted})
}

// HandlerContexter is a StageObserver that also gives each handler call
// its context (a tracer puts the span of the message being handled in it,
// so what the handler sends on carries the trace). HandlerContext runs on
// the handler's goroutine just before the handler: it must be cheap.
type HandlerContexter interface {
	HandlerContext(ctx context.Context, listener, thread string) context.Context
}

// handlerContext is the context a handler of listener runs with on thread:
// context.Background(), or what the Observer makes of it when it is a
// HandlerContexter.
func (p *Pump) handlerContext(listener, thread string) context.Context {
	ctx := context.Background()
	if hc, ok := p.opts.Observer.(HandlerContexter); ok {
		ctx = hc.HandlerContext(ctx, listener, thread)
	}
	return ctx
}
