package observe

import (
	"context"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// attr returns span s's string attribute key.
func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.AsString()
		}
	}
	return ""
}

func TestOneLinkedTracePerConversation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer("hello-world", exp, true)
	o, err := organism.Load("../../organism.yaml", organism.Options{Logger: slog.New(slog.DiscardHandler), Observer: tr})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 64)
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			done <- e.Conversation
		}
	}))
	defer stop()
	tr.Attach(o.Pump)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Errorf("tracer shutdown: %v", err)
		}
	}()
	waitFor(t, done, o.BootThread)
	greet(t, o, done, "Dan")
	greet(t, o, done, "Kim")

	spans := exp.GetSpans()
	traces := map[string][]tracetest.SpanStub{} // conversation → its trace's spans
	convOf := map[string]string{}               // trace id → conversation
	for _, s := range spans {
		if s.Name == "conversation" {
			if !stage.IsThreadID(attr(s, "xmlpipe.conversation")) {
				t.Errorf("root span without a conversation: %+v", s.Attributes)
			}
			if prev, dup := convOf[s.SpanContext.TraceID().String()]; dup {
				t.Errorf("two conversations (%s, %s) share a trace", prev, attr(s, "xmlpipe.conversation"))
			}
			convOf[s.SpanContext.TraceID().String()] = attr(s, "xmlpipe.conversation")
		}
	}
	for _, s := range spans {
		conv, ok := convOf[s.SpanContext.TraceID().String()]
		if !ok {
			t.Errorf("span %q is in a trace without a conversation root", s.Name)
			continue
		}
		traces[conv] = append(traces[conv], s)
	}
	greetings := 0
	for conv, ts := range traces {
		if conv == o.BootThread {
			continue
		}
		greetings++
		byID := map[string]tracetest.SpanStub{}
		for _, s := range ts {
			byID[s.SpanContext.SpanID().String()] = s
		}
		parentName := map[string]string{} // span name → its parent's name
		roots := 0
		for _, s := range ts {
			if !s.Parent.IsValid() {
				roots++
				continue
			}
			p, ok := byID[s.Parent.SpanID().String()]
			if !ok {
				t.Errorf("conversation %s: span %q has a parent outside its trace", conv, s.Name)
				continue
			}
			parentName[s.Name] = p.Name
		}
		t.Logf("conversation %s: %d spans, parents %v", conv, len(ts), parentName)
		if roots != 1 {
			t.Errorf("conversation %s: %d root spans, want 1", conv, roots)
		}
		for child, parent := range map[string]string{
			"deliver greeter":          "conversation",
			"handle greeter":           "deliver greeter",
			"deliver shouter":          "handle greeter",
			"handle shouter":           "deliver shouter",
			"deliver response-handler": "handle shouter",
			"handle response-handler":  "deliver response-handler",
		} {
			if got := parentName[child]; got != parent {
				t.Errorf("conversation %s: parent of %q is %q, want %q", conv, child, got, parent)
			}
		}
	}
	if greetings != 2 {
		t.Errorf("%d greeting traces, want 2 (one per conversation)", greetings)
	}
}
