package observe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// tracerName is the instrumentation scope of the organism's spans.
const tracerName = "github.com/xml-pipeline/xmlpipe/pump"

// Tracer turns the pump's conversations into OpenTelemetry traces: one
// trace per conversation (a conversation a federated call began is part of
// the caller's trace, JoinTrace), its root span "conversation" from the first
// envelope to completion; a span "deliver <listener>" per envelope
// delivered (from its acceptance to the end of the handler that took it),
// with the handler's run as its child "handle <listener>"; an envelope a
// handler emits is delivered under that handler's span, so the spans follow
// the conversation hop by hop (ingress → handler → response). Failures
// (<huh>, SystemError, dead letters) are zero-length error spans under the
// span of their sender's handler.
//
// It is the pump's StageObserver and a pump watcher: build it with
// NewTracer, give it to the pump as its Observer (every message, not a
// sample: ObserveEvery 1), Attach it to the pump, Shutdown it after the
// pump. When a listener handles several messages of one conversation at
// once, an envelope it emits is parented under its latest handler span. A
// handling Halt interrupted is a failed "handle" span (attribute
// xmlpipe.interrupted) under a deliver span that stays open: the run after
// Unhalt is that delivery's second "handle" span, and what it emits hangs
// under it.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	cancel   func()

	mu    sync.Mutex
	convs map[string]*convTrace
	// where is the conversation of each open delivery (a thread belongs to
	// one conversation).
	where map[hopKey]*convTrace
	// joined are the remote parents of conversations not begun yet (calls
	// from a federation peer, JoinTrace).
	joined map[string]trace.SpanContext
}

// convTrace is one conversation's open spans.
type convTrace struct {
	root trace.Span
	ctx  context.Context // carries root
	// hops are the deliver spans waiting for their handler, by thread and
	// listener (FIFO: a listener may get several messages on one thread).
	hops map[hopKey][]hop
	// handled is the context of each listener's latest handler span.
	handled map[string]context.Context
}

// hopKey names the deliveries of one listener on one thread.
type hopKey struct{ thread, listener string }

// hop is an open deliver span.
type hop struct {
	span trace.Span
	ctx  context.Context
}

// NewTracer builds a tracer whose spans go to exporter, batched (or at
// once with sync, as tests want), under the service name organism.
func NewTracer(organism string, exporter sdktrace.SpanExporter, sync bool) *Tracer {
	var proc sdktrace.SpanProcessor
	if sync {
		proc = sdktrace.NewSimpleSpanProcessor(exporter)
	} else {
		// Only the processor used is built: a batch processor starts its
		// goroutine at once, and one built and dropped never stopped.
		proc = sdktrace.NewBatchSpanProcessor(exporter)
	}
	res := resource.NewSchemaless(semconv.ServiceName("xmlpipe"), attribute.String("xmlpipe.organism", organism))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc), sdktrace.WithResource(res))
	return &Tracer{provider: tp, tracer: tp.Tracer(tracerName), convs: map[string]*convTrace{}, where: map[hopKey]*convTrace{},
		joined: map[string]trace.SpanContext{}}
}

// OTLPExporter is an OTLP/HTTP span exporter to endpoint (host:port),
// plain HTTP when insecure.
func OTLPExporter(ctx context.Context, endpoint string, insecure bool) (sdktrace.SpanExporter, error) {
	if endpoint == "" {
		return nil, errors.New("observe: an OTLP endpoint is required")
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(endpoint)}
	if insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("observe: OTLP exporter: %w", err)
	}
	return exp, nil
}

// Attach makes the tracer watch p's events.
func (t *Tracer) Attach(p *pump.Pump) { t.cancel = p.Watch(t) }

// Shutdown stops watching, ends the spans still open and flushes the
// exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t.cancel != nil {
		t.cancel()
	}
	t.mu.Lock()
	for id, c := range t.convs {
		t.end(c, time.Now(), "shut down")
		delete(t.convs, id)
	}
	t.mu.Unlock()
	return t.provider.Shutdown(ctx)
}

// Deliver turns one event into spans.
func (t *Tracer) Deliver(e pump.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.convs[e.Conversation]
	if c == nil {
		if e.Kind == pump.EventComplete || e.Conversation == "" {
			return
		}
		base := context.Background()
		if remote, ok := t.joined[e.Conversation]; ok {
			base = trace.ContextWithRemoteSpanContext(base, remote)
			delete(t.joined, e.Conversation)
		}
		ctx, root := t.tracer.Start(base, "conversation", trace.WithTimestamp(e.Time),
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("xmlpipe.conversation", e.Conversation), attribute.String("xmlpipe.from", e.From)))
		c = &convTrace{root: root, ctx: ctx, hops: map[hopKey][]hop{}, handled: map[string]context.Context{}}
		t.convs[e.Conversation] = c
	}
	parent := c.ctx
	if h, ok := c.handled[e.From]; ok {
		parent = h
	}
	attrs := []attribute.KeyValue{attribute.String("xmlpipe.thread", e.Thread), attribute.String("xmlpipe.from", e.From),
		attribute.String("xmlpipe.to", e.To)}
	switch e.Kind {
	case pump.EventMessage:
		attrs = append(attrs, attribute.String("xmlpipe.listener", e.Listener), attribute.String("xmlpipe.payload", e.PayloadName))
		ctx, span := t.tracer.Start(parent, "deliver "+e.Listener, trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
		k := hopKey{e.Thread, e.Listener}
		c.hops[k] = append(c.hops[k], hop{span: span, ctx: ctx})
		t.where[k] = c
	case pump.EventReply:
		attrs = append(attrs, attribute.String("xmlpipe.payload", e.PayloadName))
		_, span := t.tracer.Start(parent, "reply "+e.To, trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(e.Time))
	case pump.EventHuh, pump.EventSystemError, pump.EventDeadLetter:
		attrs = append(attrs, attribute.String("xmlpipe.error", e.Error))
		_, span := t.tracer.Start(parent, string(e.Kind), trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
		span.SetStatus(codes.Error, e.Error)
		span.End(trace.WithTimestamp(e.Time))
	case pump.EventComplete:
		t.end(c, e.Time, "")
		delete(t.convs, e.Conversation)
	}
}

// ObserveStage records a handler's run as a span under its deliver span,
// and ends that deliver span. A run Halt interrupted is a failed span that
// leaves the deliver span open: the message is handled again after Unhalt,
// and that run's span (and what it emits) comes under the same deliver
// span.
func (t *Tracer) ObserveStage(s pump.StageSample) {
	if s.Stage != pump.StageHandler {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := hopKey{s.Thread, s.Listener}
	if c := t.where[k]; c != nil {
		q := c.hops[k]
		h := q[0]
		if s.Interrupted {
			_, span := t.tracer.Start(h.ctx, "handle "+s.Listener, trace.WithTimestamp(s.Start),
				trace.WithAttributes(attribute.String("xmlpipe.thread", s.Thread), attribute.String("xmlpipe.listener", s.Listener),
					attribute.Bool("xmlpipe.interrupted", true)))
			span.SetStatus(codes.Error, "interrupted: handled again (after unhalt, or after the restart of a stop)")
			span.End(trace.WithTimestamp(s.Start.Add(s.Duration)))
			return
		}
		if len(q) == 1 {
			delete(c.hops, k)
			delete(t.where, k)
		} else {
			c.hops[k] = q[1:]
		}
		ctx, span := t.tracer.Start(h.ctx, "handle "+s.Listener, trace.WithTimestamp(s.Start),
			trace.WithAttributes(attribute.String("xmlpipe.thread", s.Thread), attribute.String("xmlpipe.listener", s.Listener)))
		end := s.Start.Add(s.Duration)
		if s.Failed {
			span.SetStatus(codes.Error, "handler failed")
		}
		span.End(trace.WithTimestamp(end))
		h.span.End(trace.WithTimestamp(end))
		c.handled[s.Listener] = ctx
	}
}

// end ends every open span of conversation c at at and forgets its
// deliveries; the deliveries still open are marked as not handled (why).
func (t *Tracer) end(c *convTrace, at time.Time, why string) {
	for k, q := range c.hops {
		delete(t.where, k)
		for _, h := range q {
			if why == "" {
				why = "not handled before the conversation completed"
			}
			h.span.SetStatus(codes.Error, why)
			h.span.End(trace.WithTimestamp(at))
		}
	}
	c.root.End(trace.WithTimestamp(at))
}

// HandlerContext returns ctx carrying the deliver span of the message
// listener is about to handle on thread (as a pump.HandlerContexter), so a
// handler that calls out — a federation gateway's proxy — can carry the
// trace on. When the listener has several messages of the thread open, it
// is the oldest one's span.
func (t *Tracer) HandlerContext(ctx context.Context, listener, thread string) context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := hopKey{thread, listener}
	if c := t.where[k]; c != nil {
		if q := c.hops[k]; len(q) > 0 {
			return trace.ContextWithSpan(ctx, q[0].span)
		}
	}
	return ctx
}

// JoinTrace makes the root span of conversation, when it begins, a child
// of parent (the span of a federation peer that called into this
// organism): both sides of the call are then one trace. forget drops
// parent when the conversation does not begin (federation.TraceJoiner).
func (t *Tracer) JoinTrace(conversation string, parent trace.SpanContext) (forget func()) {
	t.mu.Lock()
	t.joined[conversation] = parent
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.joined, conversation)
		t.mu.Unlock()
	}
}

var (
	_ pump.HandlerContexter  = (*Tracer)(nil)
	_ pump.HandlerContexter  = Observers(nil)
	_ federation.TraceJoiner = (*Tracer)(nil)
)
