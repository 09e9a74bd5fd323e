package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// waitTimeout bounds every wait (a failsafe, never a pause).
const waitTimeout = 10 * time.Second

// helloWorld starts the repository's hello-world organism (in memory) with
// m as its stage observer and attached to it, and returns it with a channel
// of completed conversations.
func helloWorld(t *testing.T, m *Metrics) (*organism.Organism, <-chan string) {
	t.Helper()
	o, err := organism.Load("../../organism.yaml", organism.Options{Logger: slog.New(slog.DiscardHandler), Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 64)
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			done <- e.Conversation
		}
	}))
	t.Cleanup(stop)
	if err := m.Attach(Sources{Pump: o.Pump}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	waitFor(t, done, o.BootThread)
	return o, done
}

// waitFor waits until conversation conv completes.
func waitFor(t *testing.T, done <-chan string, conv string) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case c := <-done:
			if c == conv {
				return
			}
		case <-timer.C:
			t.Fatalf("conversation %s did not complete", conv)
		}
	}
}

// greet sends a Greeting to greeter from tester and waits for its
// conversation to complete.
func greet(t *testing.T, o *organism.Organism, done <-chan string, name string) {
	t.Helper()
	thread := stage.NewThreadID()
	raw := fmt.Sprintf(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>tester</from><to>greeter</to>`+
		`<thread>%s</thread></meta><Greeting xmlns=""><Name>%s</Name></Greeting></message>`, thread, name)
	if err := o.Pump.Inject(context.Background(), []byte(raw), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, thread)
}

// gather returns the registry's families by name.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// sample returns the metric of family name whose labels are exactly
// labels (name, value pairs), nil if none.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		ok := true
		for i, lp := range m.GetLabel() {
			if lp.GetName() != labels[2*i] || lp.GetValue() != labels[2*i+1] {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// stageCount is how many samples stage_duration_seconds holds for stage
// and listener.
func stageCount(fams map[string]*dto.MetricFamily, stage, listener string) uint64 {
	return sample(fams, "xmlpipe_stage_duration_seconds", "listener", listener, "stage", stage).GetHistogram().GetSampleCount()
}

func TestStageHistogramsCountEveryMessage(t *testing.T) {
	m := NewMetrics()
	o, done := helloWorld(t, m)
	before := gather(t, m)
	const n = 5
	for i := range n {
		greet(t, o, done, fmt.Sprint("Dan", i))
	}
	after := gather(t, m)
	for _, c := range []struct {
		stage, listener string
		want            uint64
	}{
		// Greeting, GreetingResponse, ShoutedResponse per conversation.
		{"read", "", 3 * n},
		{"validate", "greeter", n},
		{"validate", "shouter", n},
		{"validate", "response-handler", n},
		{"handler", "greeter", n},
		{"handler", "shouter", n},
		{"handler", "response-handler", n},
	} {
		if got := stageCount(after, c.stage, c.listener) - stageCount(before, c.stage, c.listener); got != c.want {
			t.Errorf("stage %s listener %q: %d samples, want %d", c.stage, c.listener, got, c.want)
		}
	}
	h := sample(after, "xmlpipe_stage_duration_seconds", "listener", "greeter", "stage", "handler").GetHistogram()
	if h.GetSampleSum() <= 0 {
		t.Errorf("handler latency sum %v, want > 0", h.GetSampleSum())
	}
}

func TestFailedReadIsTimedAndCountedAsHuh(t *testing.T) {
	m := NewMetrics()
	o, _ := helloWorld(t, m)
	before := gather(t, m)
	huhs := make(chan pump.Event, 1)
	stop := o.Pump.Watch(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventHuh {
			huhs <- e
		}
	}))
	defer stop()
	if err := o.Pump.Inject(context.Background(), []byte("<<<not xml"), nil); err != nil {
		t.Fatal(err)
	}
	var huh pump.Event
	select {
	case huh = <-huhs:
	case <-time.After(waitTimeout):
		t.Fatal("no <huh> for a malformed envelope")
	}
	after := gather(t, m)
	if got := stageCount(after, "read", "") - stageCount(before, "read", ""); got != 1 {
		t.Errorf("read samples moved by %d, want 1", got)
	}
	if got := sample(after, "xmlpipe_huh_total", "reason", huh.Error).GetCounter().GetValue(); got != 1 {
		t.Errorf("huh_total{reason=%q} = %v, want 1", huh.Error, got)
	}
}

func TestReasonsAreBounded(t *testing.T) {
	var c counterMap
	const n = 3 * maxReasons
	for i := range n {
		c.add(fmt.Sprint("reason ", i), maxReasons)
	}
	c.add("reason 0", maxReasons)
	series, total := 0, int64(0)
	c.m.Range(func(_, v any) bool {
		series++
		total += v.(interface{ Load() int64 }).Load()
		return true
	})
	if series != maxReasons {
		t.Errorf("%d series, want %d", series, maxReasons)
	}
	if total != n+1 {
		t.Errorf("counted %d, want %d", total, n+1)
	}
	if got := c.get("other").Load(); got != n-(maxReasons-1) {
		t.Errorf("other = %d, want %d", got, n-(maxReasons-1))
	}
}

func TestAttach(t *testing.T) {
	m := NewMetrics()
	if err := m.Attach(Sources{}); err == nil {
		t.Error("Attach without a pump: no error")
	}
	p, err := pump.New(pump.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Attach(Sources{Pump: p}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Attach(Sources{Pump: p}); !errors.Is(err, ErrAttached) {
		t.Errorf("second Attach: %v, want ErrAttached", err)
	}
	if len(m.stageObs) != len(pump.Stages()) {
		t.Errorf("%d stage caches for %d stages", len(m.stageObs), len(pump.Stages()))
	}
}

// TestConversationsLiveFallsAtCompletion: once every conversation completed,
// conversations_live is 0, while threads_live still counts the threads the
// registry keeps for a continuation (what it is documented to count).
func TestConversationsLiveFallsAtCompletion(t *testing.T) {
	m := NewMetrics()
	o, done := helloWorld(t, m)
	greet(t, o, done, "Dan")
	greet(t, o, done, "Kim")
	fams := gather(t, m)
	if s := sample(fams, "xmlpipe_conversations_live"); s == nil || s.GetGauge().GetValue() != 0 {
		t.Errorf("conversations_live = %v after every conversation completed, want 0", s)
	}
	if got, want := sample(fams, "xmlpipe_threads_live").GetGauge().GetValue(), float64(o.Pump.Threads().Len()); got != want {
		t.Errorf("threads_live = %v, want the registry's %v", got, want)
	}
}
