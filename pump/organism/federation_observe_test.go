package organism

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
)

// greetAcross sends Greeting{Dan} to A's imported greeter and waits until
// A printed B's shouted answer and A's conversation completed; it returns
// the conversation.
func greetAcross(t *testing.T, orgA, orgB *Organism, out *printed) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	events := make(chan pump.Event, 16)
	thread, err := orgA.Pump.Send(ctx, "console", "greeter", &hello.Greeting{Name: "Dan"},
		pump.OutletFunc(func(e pump.Event) { events <- e }))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-out.ch:
		if line != "[b] HELLO, DAN!" {
			t.Fatalf("A printed %q", line)
		}
	case <-ctx.Done():
		t.Fatalf("A printed nothing; gateways A %+v B %+v", orgA.Federation.Status(), orgB.Federation.Status())
	}
	for {
		select {
		case e := <-events:
			if e.Kind == pump.EventHuh {
				t.Fatalf("huh: %s", e.Error)
			}
			if e.Kind == pump.EventComplete && e.Conversation == thread {
				return thread
			}
		case <-ctx.Done():
			t.Fatal("A's conversation never completed")
		}
	}
}

// scrape reads m's /metrics text with the Prometheus text parser.
func scrape(t *testing.T, m *observe.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// byLabels maps the samples of family name to their value, keyed by their
// label values joined with "/" in the order of the label names (as the
// exposition sorts them: direction/gateway/kind), valued as counters,
// gauges, or a histogram's count.
func byLabels(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var vals []string
		for _, l := range m.GetLabel() {
			vals = append(vals, l.GetValue())
		}
		out[strings.Join(vals, "/")] = m.GetCounter().GetValue() + m.GetGauge().GetValue() +
			float64(m.GetHistogram().GetSampleCount())
	}
	return out
}

// withoutMeta drops the meta introspection envelopes (how many the import
// refreshes exchange depends on timing).
func withoutMeta(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if !strings.HasSuffix(k, "/meta") && !strings.HasSuffix(k, "/meta-answer") {
			out[k] = v
		}
	}
	return out
}

// TestFederatedCallMetrics: after one federated hello-world (A calls B's
// greeter, B's shouter calls A's printer back), each side's /metrics count
// exactly the envelopes of the two calls — each call and the end that
// answers it, out on the caller and in on the callee — one answered call
// each, no refusal, both links up and, once acknowledged, nothing queued.
func TestFederatedCallMetrics(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	mA, mB := observe.NewMetrics(), observe.NewMetrics()
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{GatewayObserver: mB}, true)
	out := &printed{ch: make(chan string, 4)}
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a,
		Options{Env: catalog.Env{Print: out.print}, GatewayObserver: mA}, false)
	for _, x := range []struct {
		m *observe.Metrics
		o *Organism
	}{{mA, orgA}, {mB, orgB}} {
		if err := x.m.Attach(observe.Sources{Pump: x.o.Pump, Gateways: x.o.Federation}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(x.m.Close)
	}
	waitImport(t, orgB, "response-handler")
	greetAcross(t, orgA, orgB, out)

	// No event tells when the peer's acknowledgements arrived: the queue
	// gauges are polled until they read 0.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var famsA, famsB map[string]*dto.MetricFamily
	for range tick.C {
		famsA, famsB = scrape(t, mA), scrape(t, mB)
		qa := byLabels(famsA, "xmlpipe_gateway_queued")
		qb := byLabels(famsB, "xmlpipe_gateway_queued")
		if qa["b"] == 0 && qb["a"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("envelopes never acknowledged: queued A %v B %v", qa, qb)
		}
	}
	for _, c := range []struct {
		side, name string
		fams       map[string]*dto.MetricFamily
		skipMeta   bool
		want       map[string]float64
	}{
		{"A", "xmlpipe_gateway_envelopes_total", famsA, true,
			map[string]float64{"out/b/call": 1, "in/b/end": 1, "in/b/call": 1, "out/b/end": 1}},
		{"B", "xmlpipe_gateway_envelopes_total", famsB, true,
			map[string]float64{"in/a/call": 1, "out/a/end": 1, "out/a/call": 1, "in/a/end": 1}},
		{"A", "xmlpipe_gateway_call_seconds", famsA, false, map[string]float64{"b": 1}},
		{"B", "xmlpipe_gateway_call_seconds", famsB, false, map[string]float64{"a": 1}},
		{"A", "xmlpipe_gateway_up", famsA, false, map[string]float64{"b": 1}},
		{"B", "xmlpipe_gateway_up", famsB, false, map[string]float64{"a": 1}},
		{"A", "xmlpipe_gateway_refused_total", famsA, false, map[string]float64{}},
		{"B", "xmlpipe_gateway_refused_total", famsB, false, map[string]float64{}},
	} {
		got := byLabels(c.fams, c.name)
		if c.skipMeta {
			got = withoutMeta(got)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.side, c.name, d)
		}
	}
	// Meta traffic is never queued: a question or answer written to a link
	// that closes before the peer reads it (organism.New's link to fetch
	// the imports, which the peer may question meanwhile) is counted out
	// and never in. Each side still receives no more than the other sent,
	// and answers no more than it was asked.
	envA, envB := byLabels(famsA, "xmlpipe_gateway_envelopes_total"), byLabels(famsB, "xmlpipe_gateway_envelopes_total")
	for _, c := range []struct {
		what     string
		from, to map[string]float64
		out, in  string
	}{
		{"A's questions", envA, envB, "out/b/meta", "in/a/meta"},
		{"B's answers to them", envB, envA, "out/a/meta-answer", "in/b/meta-answer"},
		{"B's questions", envB, envA, "out/a/meta", "in/b/meta"},
		{"A's answers to them", envA, envB, "out/b/meta-answer", "in/a/meta-answer"},
	} {
		if c.to[c.in] > c.from[c.out] {
			t.Errorf("%s: %v received, %v sent", c.what, c.to[c.in], c.from[c.out])
		}
	}
	if envB["out/a/meta-answer"] > envB["in/a/meta"] || envA["out/b/meta-answer"] > envA["in/b/meta"] {
		t.Errorf("more meta answers than questions: A %v B %v", envA, envB)
	}
	if envA["out/b/meta"] == 0 {
		t.Errorf("A asked B nothing (its import of Greeting takes a meta question): %v", envA)
	}
}

// TestFederatedCallOneTrace: with a tracer on both organisms, the
// conversation A's call begins on B is a child of the span of A's greeter
// delivery that made the call, and the conversation B's shouter begins on A
// (calling A's printer back) a child of B's span: one trace id spans both
// sides and both hops.
func TestFederatedCallOneTrace(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	expA, expB := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
	trA, trB := observe.NewTracer("organism-a", expA, true), observe.NewTracer("organism-b", expB, true)
	for _, tr := range []*observe.Tracer{trA, trB} {
		t.Cleanup(func() {
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Errorf("tracer shutdown: %v", err)
			}
		})
	}
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{Observer: trB, GatewayTraces: trB}, true)
	trB.Attach(orgB.Pump)
	out := &printed{ch: make(chan string, 4)}
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a,
		Options{Env: catalog.Env{Print: out.print}, Observer: trA, GatewayTraces: trA}, false)
	trA.Attach(orgA.Pump)
	waitImport(t, orgB, "response-handler")
	conv := greetAcross(t, orgA, orgB, out)

	spansA, spansB := expA.GetSpans(), expB.GetSpans()
	var root tracetest.SpanStub
	for _, s := range spansA {
		if s.Name == "conversation" && spanAttr(s, "xmlpipe.conversation") == conv {
			root = s
		}
	}
	if !root.SpanContext.IsValid() {
		t.Fatalf("A has no root span for conversation %s", conv)
	}
	traceID := root.SpanContext.TraceID()
	ids := func(spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
		m := map[string]tracetest.SpanStub{}
		for _, s := range spans {
			if s.SpanContext.TraceID() == traceID {
				m[s.SpanContext.SpanID().String()] = s
			}
		}
		return m
	}
	inA, inB := ids(spansA), ids(spansB)
	// parentOf names the span (and its side) that is the parent of the
	// root span of the conversation begun on side for a call.
	parentOf := func(side string, in, other map[string]tracetest.SpanStub, otherSide string) string {
		for _, s := range in {
			if s.Name != "conversation" || s.SpanContext.SpanID() == root.SpanContext.SpanID() {
				continue
			}
			if !s.Parent.IsRemote() {
				t.Errorf("%s: conversation span of the call has a local parent", side)
			}
			if p, ok := other[s.Parent.SpanID().String()]; ok {
				return otherSide + ": " + p.Name
			}
			return "?"
		}
		return ""
	}
	got := map[string]string{
		"B's conversation": parentOf("B", inB, inA, "A"),
		"A's callback":     parentOf("A", inA, inB, "B"),
	}
	want := map[string]string{
		"B's conversation": "A: deliver greeter",
		"A's callback":     "B: deliver response-handler",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parents of the called conversations' roots (-want +got):\n%s", d)
	}
	handled := map[string]bool{}
	for _, s := range inB {
		handled[s.Name] = true
	}
	for _, name := range []string{"handle greeter", "handle shouter"} {
		if !handled[name] {
			t.Errorf("B's %q span is not in A's trace %s", name, traceID)
		}
	}
}

// spanAttr returns span s's string attribute key.
func spanAttr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.AsString()
		}
	}
	return ""
}
