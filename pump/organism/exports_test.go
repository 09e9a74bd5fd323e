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

// TestExportsOutsideTheGatewayProfile: an export whose listener the
// gateway's profile does not reach, or a callable's call whose callable it
// does not reach (the call runs under the profile narrowed by the
// callable's), is refused or fails on every call from the peer — while the
// peer is told only that the tag is not exported. The operator is warned,
// with the export's file:line; exports the profile serves are not named.
func TestExportsOutsideTheGatewayProfile(t *testing.T) {
	self, a, c, d, e := newFedSide(t), newFedSide(t), newFedSide(t), newFedSide(t), newFedSide(t)
	cfg, err := config.Parse("o.yaml", fmt.Appendf(nil, `organism: {name: tools}
profiles:
  calc: {listeners: [calculate]}
  callonly: {listeners: [calculate.call]}
  peers: {listeners: ["calculate*"]}
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
    callable:
      description: Evaluates an arithmetic expression
      parameters: [{name: Expression, required: true}]
gateways:
  - {name: a, trusted_identity: %s, profile: calc, export: [Calculate, CalculateCall]}
  - {name: c, trusted_identity: %s, profile: callonly, export: [CalculateCall]}
  - {name: d, trusted_identity: %s, profile: peers, export: [Calculate, CalculateCall]}
  - {name: e, trusted_identity: %s, export: [CalculateCall]}
`, a.pub, c.pub, d.pub, e.pub))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := startFed(t, cfg, self, Options{}, false)
	want := []string{
		`o.yaml:15: gateways[0].export[1]: gateway a's profile calc does not reach calculate.call, which takes <CalculateCall>: ` +
			`its calls to it will be refused`,
		`o.yaml:16: gateways[1].export[0]: gateway c's profile callonly reaches calculate.call but not calculate, which its ` +
			`calls of <CalculateCall> run: every call will fail`,
	}
	if diff := cmp.Diff(want, o.UnservedExports()); diff != "" {
		t.Errorf("unserved exports (-want +got):\n%s", diff)
	}
}
