package organism

import (
	"context"
	"encoding/xml"
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

// qualifiedWeather is a payload whose root is namespace-qualified.
type qualifiedWeather struct {
	XMLName xml.Name `xml:"urn:test:weather Weather"`
	City    string
}

// TestFederatedQualifiedExportNamed: organism B exports Weather, which its
// listener takes only in a namespace. Only unqualified root tags cross a
// gateway, so A cannot import it — and says so, naming the namespace,
// once (not "asking the peer again" for ever), rather than that B does not
// export it; A's other import is imported all the same, and B's start
// warns that its export is qualified.
func TestFederatedQualifiedExportNamed(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: tools-b}
meta: {allow_remote: true}
listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
gateways:
  - {name: a, trusted_identity: %s, export: [Calculate, Weather]}
`, a.pub))
	if err != nil {
		t.Fatal(err)
	}
	orgB, addr := startFed(t, cfgB, b, Options{}, true)
	pt, err := xmlpipe.PayloadTypeOf[qualifiedWeather]()
	if err != nil {
		t.Fatal(err)
	}
	if err := orgB.Pump.AddListener(pump.Listener{Name: "weather", Description: "Tells the weather", Payload: pt,
		Handler: xmlpipe.Typed(func(context.Context, *qualifiedWeather, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, nil
		})}); err != nil {
		t.Fatal(err)
	}
	want := []string{`b.yaml:6: gateways[0].export[1]: <Weather> is taken only in namespace "urn:test:weather", ` +
		`and only unqualified root tags cross a gateway: gateway a cannot import it, and its calls to it will be refused`}
	if diff := cmp.Diff(want, orgB.UnservedExports()); diff != "" {
		t.Errorf("B's unserved exports (-want +got):\n%s", diff)
	}

	cfgA, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: weather-a}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [Calculate, Weather]}
`, addr, b.pub))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	orgA, _ := startFed(t, cfgA, a, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, false)
	waitImport(t, orgA, "calculate")
	const refused = "cannot stand for a local listener"
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(logs.String(), refused) {
		if time.Now().After(deadline) {
			t.Fatalf("A never logged the qualified import as refused:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond) // polling A's log
	}
	s := logs.String()
	for _, w := range []string{`the peer exports <Weather> only in namespace \"urn:test:weather\"`,
		"only unqualified root tags can be imported"} {
		if !strings.Contains(s, w) {
			t.Errorf("A's log lacks %q:\n%s", w, s)
		}
	}
	for _, bad := range []string{"does not export <Weather>", "asking the peer again"} {
		if strings.Contains(s, bad) {
			t.Errorf("A's log says %q:\n%s", bad, s)
		}
	}
	if _, ok := orgA.Pump.Lookup("weather"); ok {
		t.Error("A imported the qualified export")
	}
}
