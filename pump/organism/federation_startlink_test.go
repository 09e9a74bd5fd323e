package organism

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestFederatedStartLinkKeptBesideUnimportable: B exports Calculate and
// one export A cannot import (taken only in a namespace, or with a nested
// element). The link A makes while it is assembled is kept: A starts with
// Calculate imported, a call to it is answered over that one link (B sees
// one link come up, none go down), and A logs the export it cannot import
// once, by its element and why, without asking for it again.
func TestFederatedStartLinkKeptBesideUnimportable(t *testing.T) {
	tests := []struct {
		name string
		tag  string
		// optsB adds B's listener for tag.
		optsB func(t *testing.T) Options
		// addB adds it once B runs (a listener not in Options).
		addB func(t *testing.T, o *Organism)
		// why is in A's log, once, naming the export and why.
		why string
	}{{
		name: "qualified",
		tag:  "Weather",
		optsB: func(*testing.T) Options {
			return Options{}
		},
		addB: func(t *testing.T, o *Organism) {
			pt, err := xmlpipe.PayloadTypeOf[qualifiedWeather]()
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Pump.AddListener(pump.Listener{Name: "weather", Description: "Tells the weather", Payload: pt,
				Handler: xmlpipe.Typed(func(context.Context, *qualifiedWeather, xmlpipe.Metadata) (xmlpipe.Response, error) {
					return nil, nil
				})}); err != nil {
				t.Fatal(err)
			}
		},
		why: `only in namespace \"urn:test:weather\"`,
	}, {
		name: "nested",
		tag:  "Nested",
		optsB: func(*testing.T) Options {
			return Options{Listeners: []Listener{Func("nested", "Takes a nested element",
				func(context.Context, *Nested, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })}}
		},
		addB: func(*testing.T, *Organism) {},
		why:  "Nested.Inner",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFedSide(t), newFedSide(t)
			cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: tools-b}
meta: {allow_remote: true}
listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
gateways:
  - {name: a, trusted_identity: %s, export: [Calculate, %s]}
`, a.pub, tt.tag))
			if err != nil {
				t.Fatal(err)
			}
			orgB, addr := startFed(t, cfgB, b, tt.optsB(t), true)
			tt.addB(t, orgB)
			events := make(chan string, 16)
			cancel := orgB.Federation.Watch(func(event, gw, _ string) { events <- event + " " + gw })
			defer cancel()

			cfgA, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: weather-a}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [Calculate, %s]}
`, addr, b.pub, tt.tag))
			if err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			// Checked once A has shut down (cleanups run last first): all
			// it had to say about its imports is logged by then.
			t.Cleanup(func() {
				s := logs.String()
				if n := strings.Count(s, tt.why); n != 1 {
					t.Errorf("A's log says %q %d times, want once:\n%s", tt.why, n, s)
				}
				for _, bad := range []string{"imports not fetched at start", "asking the peer again"} {
					if strings.Contains(s, bad) {
						t.Errorf("A's log says %q:\n%s", bad, s)
					}
				}
			})
			orgA, _ := startFed(t, cfgA, a, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, false)
			l, ok := orgA.Pump.Lookup("calculate")
			if !ok {
				t.Fatalf("A was started without the import it could fetch at assembly:\n%s", logs.String())
			}
			v, err := l.Payload.Decode([]byte(`<Calculate><Expression>6 * 7</Expression></Calculate>`))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancelAsk := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancelAsk()
			ev, err := orgA.Ask(ctx, "calculate", v)
			if err != nil {
				t.Fatalf("Ask calculate: %v", err)
			}
			if ev.Kind != pump.EventReply || !bytes.Contains(ev.Envelope, []byte("42")) {
				t.Errorf("answer %s %s, want B's 42", ev.Kind, ev.Envelope)
			}
			var got []string
			for len(events) > 0 {
				got = append(got, <-events)
			}
			if diff := cmp.Diff([]string{"gateway-connected a"}, got); diff != "" {
				t.Errorf("B's link events (-want +got):\n%s", diff)
			}
			if _, ok := orgA.Pump.Lookup(strings.ToLower(tt.tag)); ok {
				t.Errorf("A imported %s", tt.tag)
			}
		})
	}
}
