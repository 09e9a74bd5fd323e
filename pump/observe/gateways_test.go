package observe

import (
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// fixedGateways is a federation manager's status, fixed.
type fixedGateways []federation.GatewayStatus

func (f fixedGateways) Status() []federation.GatewayStatus { return f }

// TestGatewayMetrics: the counters count what the federation observer is
// told, and gateway_up / gateway_queued read the manager's status at scrape
// time.
func TestGatewayMetrics(t *testing.T) {
	p, err := pump.New(pump.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	st := fixedGateways{{Name: "b", Connected: true, Queued: 3}, {Name: "c", Queued: 7}}
	if err := m.Attach(Sources{Pump: p, Gateways: st}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var o federation.Observer = m
	o.Envelope("b", federation.DirectionOut, federation.KindCall)
	o.Envelope("b", federation.DirectionOut, federation.KindCall)
	o.Envelope("b", federation.DirectionIn, federation.KindReply)
	o.Refused("c", federation.RefusedSignature)
	o.RoundTrip("b", 40*time.Millisecond)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"xmlpipe_gateway_envelopes_total", []string{"direction", "out", "gateway", "b", "kind", "call"}, 2},
		{"xmlpipe_gateway_envelopes_total", []string{"direction", "in", "gateway", "b", "kind", "reply"}, 1},
		{"xmlpipe_gateway_refused_total", []string{"gateway", "c", "reason", "signature"}, 1},
		{"xmlpipe_gateway_up", []string{"gateway", "b"}, 1},
		{"xmlpipe_gateway_up", []string{"gateway", "c"}, 0},
		{"xmlpipe_gateway_queued", []string{"gateway", "b"}, 3},
		{"xmlpipe_gateway_queued", []string{"gateway", "c"}, 7},
	} {
		s := sample(byName, c.name, c.labels...)
		if s == nil {
			t.Errorf("%s%v missing", c.name, c.labels)
			continue
		}
		if got := s.GetGauge().GetValue() + s.GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := sample(byName, "xmlpipe_gateway_call_seconds", "gateway", "b").GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 0.04 {
		t.Errorf("gateway_call_seconds{b}: count %d sum %v, want 1 and 0.04", h.GetSampleCount(), h.GetSampleSum())
	}
}
