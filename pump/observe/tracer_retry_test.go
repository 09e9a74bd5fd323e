package observe

import (
	"context"
	"log/slog"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TraceJob is the payload a test client sends to the worker listener.
type TraceJob struct{ Label string }

// TraceDone is what the worker sends on to the finisher.
type TraceDone struct{ Label string }

// traceListener builds a listener over payload type T.
func traceListener[T any](t *testing.T, name string, h func(context.Context, *T, xmlpipe.Metadata) (xmlpipe.Response, error)) pump.Listener {
	t.Helper()
	pt, err := xmlpipe.PayloadTypeOf[T]()
	if err != nil {
		t.Fatal(err)
	}
	return pump.Listener{Name: name, Payload: pt, Handler: xmlpipe.Typed(h)}
}

// TestTraceOfAHandlingRetried: a handling Halt interrupted is handled again
// after Unhalt, and its trace says so: the interrupted run is a failed
// "handle" span, the message's "deliver" span stays open until the run that
// succeeds, whose "handle" span is under it, and what that run emits hangs
// under the successful "handle" span — the same whether a reload replaced
// the listener (same name) while it was halted or not.
func TestTraceOfAHandlingRetried(t *testing.T) {
	for _, reload := range []bool{false, true} {
		name := "halt"
		if reload {
			name = "halt, reload, unhalt"
		}
		t.Run(name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := NewTracer("retry", exp, true)
			p, err := pump.New(pump.Options{Logger: slog.New(slog.DiscardHandler), Observer: tr})
			if err != nil {
				t.Fatal(err)
			}
			running := make(chan struct{})
			var calls atomic.Int32
			worker := func() pump.Listener {
				l := traceListener(t, "worker", func(ctx context.Context, in *TraceJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
					if calls.Add(1) == 1 {
						close(running)
						<-ctx.Done() // a long model call, halted
						return nil, context.Cause(ctx)
					}
					return xmlpipe.Send("finisher", &TraceDone{Label: in.Label}), nil
				})
				l.Agent, l.Peers = true, []string{"finisher"}
				return l
			}
			finisher := traceListener(t, "finisher", func(context.Context, *TraceDone, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
			for _, l := range []pump.Listener{worker(), finisher} {
				if err := p.Register(l); err != nil {
					t.Fatal(err)
				}
			}
			tr.Attach(p)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := p.Shutdown(context.Background()); err != nil {
					t.Errorf("shutdown: %v", err)
				}
				if err := tr.Shutdown(context.Background()); err != nil {
					t.Errorf("tracer shutdown: %v", err)
				}
			}()
			done := make(chan struct{})
			out := pump.OutletFunc(func(e pump.Event) {
				if e.Kind == pump.EventComplete {
					close(done)
				}
			})
			if _, err := p.Send(context.Background(), "client", "worker", &TraceJob{Label: "x"}, out); err != nil {
				t.Fatal(err)
			}
			deadline := time.After(30 * time.Second)
			select {
			case <-running:
			case <-deadline:
				t.Fatal("the worker did not run")
			}
			if rep, err := p.Halt(pump.HaltAgents); err != nil || rep.Cancelled != 1 {
				t.Fatalf("Halt = %+v, %v; want 1 cancelled", rep, err)
			}
			if reload {
				if _, err := p.Change(pump.ListenerChange{Remove: []string{"worker"}, Add: []pump.Listener{worker()}}); err != nil {
					t.Fatal(err)
				}
			}
			p.Unhalt()
			select {
			case <-done:
			case <-deadline:
				t.Fatal("the conversation did not complete")
			}

			spans := exp.GetSpans()
			byID := map[string]tracetest.SpanStub{}
			for _, s := range spans {
				byID[s.SpanContext.SpanID().String()] = s
			}
			// Each span as "name (status) <- parent name".
			var got []string
			for _, s := range spans {
				line := s.Name
				if s.Status.Code == codes.Error {
					line += " (error)"
				}
				if s.Parent.IsValid() {
					line += " <- " + byID[s.Parent.SpanID().String()].Name
				}
				got = append(got, line)
			}
			sort.Strings(got)
			want := []string{
				"conversation",
				"deliver finisher <- handle worker",
				"deliver worker <- conversation",
				"handle finisher <- deliver finisher",
				"handle worker (error) <- deliver worker",
				"handle worker <- deliver worker",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("spans (-want +got):\n%s", diff)
			}
			// The successful run's span is the parent of what it emitted.
			for _, s := range spans {
				if s.Name != "deliver finisher" {
					continue
				}
				if parent := byID[s.Parent.SpanID().String()]; parent.Status.Code == codes.Error {
					t.Errorf("deliver finisher hangs under the interrupted run's span")
				}
			}
		})
	}
}
