package organism

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestUnservedExports: an export no listener takes (a typo, or a listener
// removed) is named with its file:line; one a listener takes, or another
// gateway imports (passed on), is not.
func TestUnservedExports(t *testing.T) {
	a, b, c := newFedSide(t), newFedSide(t), newFedSide(t)
	cfg, err := config.Parse("o.yaml", fmt.Appendf(nil, `organism: {name: tools}
listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
gateways:
  - name: a
    trusted_identity: %s
    export: [Calculate, Calculat, Weather]
  - {name: c, trusted_identity: %s, import: [Weather]}
`, b.pub, c.pub))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := startFed(t, cfg, a, Options{}, false)
	want := []string{`o.yaml:7: gateways[0].export[1]: no listener takes <Calculat>: gateway a's calls to it will be refused`}
	if diff := cmp.Diff(want, o.UnservedExports()); diff != "" {
		t.Errorf("unserved exports (-want +got):\n%s", diff)
	}
}
