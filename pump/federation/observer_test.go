package federation

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"
)

// joiner records the trace parents handed to it.
type joiner map[string]trace.SpanContext

func (j joiner) JoinTrace(conv string, parent trace.SpanContext) func() {
	j[conv] = parent
	return func() { delete(j, conv) }
}

// TestTraceparentCrossesTheLink: the W3C trace context of the caller's span
// is written into <link traceparent>, read back by parse, and handed to the
// trace joiner as a remote parent; a link without one, or with one that is
// not a trace context, joins nothing.
func TestTraceparentCrossesTheLink(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), caller)
	if got := traceparent(context.Background()); got != "" {
		t.Errorf("traceparent without a span = %q, want none", got)
	}
	tp := traceparent(ctx)
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; tp != want {
		t.Fatalf("traceparent = %q, want %q", tp, want)
	}
	for _, tc := range []struct {
		name, traceparent string
		want              trace.SpanContext
	}{
		{"the caller's span", tp, caller.WithRemote(true)},
		{"none", "", trace.SpanContext{}},
		{"not a trace context", "00-zz-00f067aa0ba902b7-01", trace.SpanContext{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := &envelope{From: "a", To: "greeter", Thread: "6f1c0b3e-6a43-4b52-9a34-0d7a7f2c1e55",
				Link:    link{ID: "x", Kind: KindCall, Sent: time.Unix(1700000000, 0).UTC(), Traceparent: tc.traceparent},
				Payload: []byte(`<Greeting xmlns=""><Name>Dan</Name></Greeting>`)}
			e, err := parse(sent.build())
			if err != nil {
				t.Fatal(err)
			}
			if e.Link.Traceparent != tc.traceparent {
				t.Fatalf("parsed traceparent %q, want %q", e.Link.Traceparent, tc.traceparent)
			}
			j := joiner{}
			m := &Manager{opts: Options{Traces: j}}
			g := &gateway{m: m, name: "b", log: slog.New(slog.DiscardHandler)}
			forget := g.joinTrace("conv", e)
			if got := j["conv"]; !got.Equal(tc.want) {
				t.Errorf("joined %v, want %v", got, tc.want)
			}
			forget()
			if len(j) != 0 {
				t.Errorf("forget left %v", j)
			}
		})
	}
}

// kinds records the envelopes an Observer is told of.
type kinds []string

func (k *kinds) Envelope(gw, dir string, kind Kind)   { *k = append(*k, gw+"/"+dir+"/"+string(kind)) }
func (k *kinds) Refused(gw, reason string)            { *k = append(*k, gw+"/refused/"+reason) }
func (k *kinds) RoundTrip(gw string, _ time.Duration) { *k = append(*k, gw+"/round-trip") }

// TestObserverKindsAreBounded: a kind the protocol does not define reaches
// the observer as "other", so a peer cannot grow its label sets.
func TestObserverKindsAreBounded(t *testing.T) {
	var seen kinds
	g := &gateway{m: &Manager{opts: Options{Observer: &seen}}, name: "b"}
	for _, k := range []Kind{KindCall, KindMetaAnswer, "x-made-up"} {
		g.envelopeSeen(DirectionIn, k)
	}
	g.m.refusal("b", RefusedStale)
	g.m.observe("b", time.Millisecond)
	want := kinds{"b/in/call", "b/in/meta-answer", "b/in/other", "b/refused/stale", "b/round-trip"}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("observer saw (-want +got):\n%s", d)
	}
}
