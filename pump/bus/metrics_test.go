package bus

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
)

// scrapeToken is the metrics fixture's scrape token.
const scrapeToken = "0123456789abcdef0123456789abcdef-scrape"

// newMetricsFixture is a fixture whose bus serves m at /metrics with
// scrapeToken; m counts the organism's events from now on.
func newMetricsFixture(t *testing.T) (*fixture, *observe.Metrics) {
	t.Helper()
	m := observe.NewMetrics()
	f := newFixture(t, func(o *Options) { o.Metrics = m; o.ScrapeToken = scrapeToken })
	if err := m.Attach(observe.Sources{Pump: f.org.Pump, Journal: f.org.Store()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return f, m
}

// scrape GETs /metrics with token and returns the status and, for a 200,
// the families parsed by the Prometheus text parser.
func (f *fixture) scrape(token string) (int, map[string]*dto.MetricFamily) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.base+"/metrics", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := f.client()
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		f.t.Fatalf("parse /metrics: %v", err)
	}
	return resp.StatusCode, fams
}

// metricValue is the value of the counter or gauge name whose labels
// include every pair of labels (0 if there is none).
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	fam := fams[name]
	if fam == nil {
		return 0
	}
next:
	for _, m := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func TestMetricsCountExactlyTheMessagesSent(t *testing.T) {
	f, _ := newMetricsFixture(t)
	op := f.loginAs("olga", auth.Operator)
	completed := make(chan string, 64)
	stop := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			completed <- e.Conversation
		}
	}))
	defer stop()

	status, before := f.scrape(scrapeToken)
	if status != http.StatusOK {
		t.Fatalf("scrape: %d", status)
	}
	const n = 7
	for i := range n {
		status, body, _ := f.do("POST", "/api/v1/inject", op, map[string]any{"to": "greeter",
			"payload": map[string]string{"name": strings.Repeat("x", i+1)}})
		if status != http.StatusOK {
			t.Fatalf("inject %d: %d %v", i, status, body)
		}
	}
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for range n {
		select {
		case <-completed:
		case <-timer.C:
			t.Fatal("conversations did not complete")
		}
	}
	_, after := f.scrape(scrapeToken)
	delta := func(name string, labels ...string) float64 {
		return metricValue(after, name, labels...) - metricValue(before, name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"xmlpipe_envelopes_in_total", []string{"listener", "greeter"}},
		{"xmlpipe_envelopes_in_total", []string{"listener", "shouter"}},
		{"xmlpipe_envelopes_in_total", []string{"listener", "response-handler"}},
		{"xmlpipe_envelopes_out_total", []string{"listener", "greeter"}},
		{"xmlpipe_envelopes_out_total", []string{"listener", "shouter"}},
		{"xmlpipe_listener_handled_total", []string{"listener", "greeter"}},
		{"xmlpipe_listener_handled_total", []string{"listener", "shouter"}},
		{"xmlpipe_conversations_completed_total", nil},
	} {
		if got := delta(c.name, c.labels...); got != n {
			t.Errorf("%s%v moved by %v, want %d", c.name, c.labels, got, n)
		}
	}
	if got := delta("xmlpipe_huh_total"); got != 0 {
		t.Errorf("huh_total moved by %v, want 0", got)
	}
	if got := metricValue(after, "xmlpipe_journal_ops_committed_total"); got <= 0 {
		t.Errorf("journal_ops_committed_total = %v, want > 0 (durable organism)", got)
	}
	if _, ok := after["go_goroutines"]; !ok {
		t.Error("the Go runtime collector is missing")
	}
}

func TestMetricsHuhByReason(t *testing.T) {
	f, _ := newMetricsFixture(t)
	op := f.loginAs("olga", auth.Operator)
	status, before := f.scrape(scrapeToken)
	if status != http.StatusOK {
		t.Fatalf("scrape: %d", status)
	}
	c := f.dial("/bus", op)
	defer c.Close()
	// Not well-formed beyond repair: the client gets a <huh>.
	if err := c.WriteMessage(1, []byte("<<<not xml")); err != nil {
		t.Fatal(err)
	}
	if got := string(readMessage(t, c)); !strings.Contains(got, "huh") {
		t.Fatalf("want a <huh>, got %s", got)
	}
	_, after := f.scrape(scrapeToken)
	if got := metricValue(after, "xmlpipe_bus_connections"); got != 1 {
		t.Errorf("bus_connections = %v with one /bus socket open, want 1", got)
	}
	var moved float64
	for _, m := range after["xmlpipe_huh_total"].GetMetric() {
		moved += m.GetCounter().GetValue()
	}
	for _, m := range before["xmlpipe_huh_total"].GetMetric() {
		moved -= m.GetCounter().GetValue()
	}
	if moved != 1 {
		t.Errorf("huh_total moved by %v, want 1", moved)
	}
}

func TestMetricsAccess(t *testing.T) {
	f, _ := newMetricsFixture(t)
	admin := f.loginAs("ada", auth.Admin)
	viewer := f.loginAs("vic", auth.Viewer)
	op := f.loginAs("olga", auth.Operator)
	secret := f.user("pat", auth.Admin)
	if err := f.auth.SetProfile(context.Background(), "pat", "calc"); err != nil {
		t.Fatal(err)
	}
	f.nextStep()
	profiled := f.login("pat", secret)
	for _, c := range []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", strings.Repeat("ab", 32), http.StatusUnauthorized},
		{"scrape token prefix", scrapeToken[:len(scrapeToken)-1], http.StatusUnauthorized},
		{"viewer session", viewer, http.StatusForbidden},
		{"operator session", op, http.StatusForbidden},
		{"admin session", admin, http.StatusOK},
		{"admin session with a profile", profiled, http.StatusForbidden}, // organism-wide counts
		{"scrape token", scrapeToken, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, _ := f.scrape(c.token); status != c.want {
				t.Errorf("GET /metrics: %d, want %d", status, c.want)
			}
		})
	}
}

func TestMetricsAbsentWithoutMetrics(t *testing.T) {
	f := newFixture(t)
	admin := f.loginAs("ada", auth.Admin)
	if status, _ := f.scrape(admin); status != http.StatusNotFound {
		t.Errorf("GET /metrics without Options.Metrics: %d, want 404", status)
	}
}

func TestMetricsScrapeTokenTooShort(t *testing.T) {
	err := Options{ScrapeToken: "short", Insecure: true}.Validate()
	if err == nil || !strings.Contains(err.Error(), "scrape token") {
		t.Errorf("Validate with a short scrape token: %v, want a scrape token error", err)
	}
}

// TestOrganismReportsHandlerLatency: with metrics, GET /api/v1/organism
// reports the sum and count of the handler timings they observed (any
// role may read it: the dashboard's latency sparkline); without, neither.
func TestOrganismReportsHandlerLatency(t *testing.T) {
	f, m := newMetricsFixture(t)
	viewer := f.loginAs("vera", auth.Viewer)
	for _, d := range []time.Duration{2 * time.Millisecond, 4 * time.Millisecond} {
		m.ObserveStage(pump.StageSample{Stage: pump.StageHandler, Listener: "greeter", Duration: d})
	}
	m.ObserveStage(pump.StageSample{Stage: pump.StageRead, Listener: "greeter", Duration: time.Second})
	status, body, _ := f.do("GET", "/api/v1/organism", viewer, nil)
	if status != http.StatusOK || body["handler_count"] != 2.0 || body["handler_seconds_sum"] != 0.006 {
		t.Fatalf("organism: %d %v; want handler_count 2, handler_seconds_sum 0.006", status, body)
	}
	plain := newFixture(t)
	status, body, _ = plain.do("GET", "/api/v1/organism", plain.loginAs("vic", auth.Viewer), nil)
	if _, ok := body["handler_count"]; status != http.StatusOK || ok {
		t.Fatalf("organism without metrics: %d %v", status, body)
	}
}
