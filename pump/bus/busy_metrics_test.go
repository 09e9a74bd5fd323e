package bus

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestBusyRefusalsScraped: every busy refusal is counted in
// xmlpipe_messages_refused_total by listener and reason, as a real scrape
// of /metrics reads it — the one admission decides in full (queue_wait)
// and those the transports answer early, unread (early), whatever the
// ingress — and the log says so in one line for the flood, with its
// count, not one line per message.
func TestBusyRefusalsScraped(t *testing.T) {
	const flood = 40
	clock := &stallClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	started, release := make(chan string, 16), make(chan struct{})
	var reads, validations atomic.Int64
	m := observe.NewMetrics()
	f := newFixtureWith(t, stallOrganism(clock, started, release, &reads, &validations),
		func(o *Options) { o.Metrics = m; o.ScrapeToken = scrapeToken })
	if err := m.Attach(observe.Sources{Pump: f.org.Pump}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	t.Cleanup(func() { close(release) })
	admin := f.tokens()[auth.Admin]
	begun := time.Now()

	f.inject(admin, "slow", map[string]string{"text": "a"})
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the first handling never started")
	}
	f.inject(admin, "slow", map[string]string{"text": "b"}) // waits behind a
	clock.advance(10 * time.Second)                         // a stalls past max_queue_wait
	// The first is refused by admission's full decision, the rest early.
	for i := range flood {
		status, body, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "slow", "payload": map[string]string{"text": "c"}})
		if status != 429 {
			t.Fatalf("inject %d at the stalled listener: %d %v, want 429", i, status, body)
		}
	}
	ws := f.dial("/ws", admin)
	readFrame(t, ws) // connected
	writeFrame(t, ws, frame{"type": "send", "id": 1, "target": "slow", "content": "d"})
	if got := readFrame(t, ws); got["code"] != "busy" {
		t.Fatalf("ws send: %v, want busy", got)
	}
	bus := f.dial("/bus", admin)
	sendRaw(t, bus, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>`+
		`<to>slow</to><thread>`+stage.NewThreadID()+`</thread></meta><Stall xmlns=""><Text>e</Text></Stall></message>`)
	if huh, got := readEnvelope(t, bus); !strings.HasPrefix(huh.Payload.Error, "Organism busy") {
		t.Fatalf("bus frame: %s, want a busy <huh>", got)
	}

	status, fams := f.scrape(scrapeToken)
	if status != 200 {
		t.Fatalf("GET /metrics: %d", status)
	}
	for _, c := range []struct {
		reason string
		want   float64
	}{
		{"queue_wait", 1},
		{"early", flood - 1 + 2}, // the rest of the REST flood, the /ws send and the /bus frame
	} {
		if got := metricValue(fams, "xmlpipe_messages_refused_total", "listener", "slow", "reason", c.reason); got != c.want {
			t.Errorf(`xmlpipe_messages_refused_total{listener="slow",reason=%q} = %v, want %v`, c.reason, got, c.want)
		}
	}
	// One line at the first refusal, then at most one per 10 s with the
	// count since (this test takes well under 10 s, bar a loaded machine).
	lines := f.logs.matching("messages refused: busy")
	if most := 1 + int(time.Since(begun)/(10*time.Second)); len(lines) == 0 || len(lines) > most {
		t.Fatalf("%d log lines of %d refusals, want 1 to %d", len(lines), flood+2, most)
	}
	if got := lines[0].listener + " " + lines[0].refused; got != "slow 1" {
		t.Errorf("first line: listener and count %q, want %q", got, "slow 1")
	}
}

// refusalLine is a "messages refused: busy" log line's listener and count.
type refusalLine struct{ listener, refused string }

// matching returns the listener and refused attributes of the records
// whose message is msg.
func (r *records) matching(msg string) []refusalLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []refusalLine
	for _, rec := range r.list {
		if rec.Message != msg {
			continue
		}
		var l refusalLine
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "listener":
				l.listener = a.Value.String()
			case "refused":
				l.refused = a.Value.String()
			}
			return true
		})
		out = append(out, l)
	}
	return out
}
