package organism

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestFederatedUnimportableNotRemembered: B exports Calculate and Nested (a
// payload with a nested element, which no import can take). A's first run
// imports Calculate and remembers it; its next run, with B unreachable,
// registers Calculate from what it remembered and says nothing of Nested —
// not "some imports are not available yet … Nested.Inner", as if a later
// link could bring it.
func TestFederatedUnimportableNotRemembered(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: tools-b}
meta: {allow_remote: true}
listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
gateways:
  - {name: a, trusted_identity: %s, export: [Calculate, Nested]}
`, a.pub))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startFed(t, cfgB, b, Options{Listeners: []Listener{Func("nested", "Takes a nested element",
		func(context.Context, *Nested, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })}}, true)

	// runA assembles and starts A importing through url, hands it to check,
	// and shuts it down.
	runA := func(url string, check func(o *Organism, log string)) {
		t.Helper()
		cfgA, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: weather-a}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [Calculate, Nested]}
`, url, b.pub))
		if err != nil {
			t.Fatal(err)
		}
		logs := &lockedBuffer{}
		o, err := New(cfgA, Options{DataDir: a.dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		check(o, logs.String())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Errorf("shutdown A: %v", err)
		}
	}
	runA(addr, func(o *Organism, log string) {
		if _, ok := o.Pump.Lookup("calculate"); !ok {
			t.Fatalf("first run: Calculate not imported:\n%s", log)
		}
	})

	// B unreachable: a port nothing listens on any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "wss://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	runA(down, func(o *Organism, log string) {
		if _, ok := o.Pump.Lookup("calculate"); !ok {
			t.Errorf("second run: the remembered Calculate was not registered:\n%s", log)
		}
		for _, bad := range []string{"not available yet", "Nested.Inner"} {
			if strings.Contains(log, bad) {
				t.Errorf("second run, peer unreachable: A's start log says %q of an import no link can bring:\n%s", bad, log)
			}
		}
	})
}
