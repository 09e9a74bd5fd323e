package pump_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestProfileNoSchemaOracle: a message for a listener outside the sender's
// profile, carrying a payload that listener does not take, is refused with
// the same error and diagnostics as one for a listener that does not
// exist — no "greeter takes <Pong>" schema hint tells the restricted
// sender it is there — while a sender without a profile and one whose
// profile allows the listener keep the hint.
func TestProfileNoSchemaOracle(t *testing.T) {
	defs := []pump.ProfileDef{{Name: "calc-only", Listeners: []string{"calculate"}}, {Name: "all", Listeners: []string{"*"}}}
	masked := profiled(t, defs, sink[Ping](t, "calculate", newProbe()), sink[Pong](t, "greeter", newProbe()))
	absent := profiled(t, defs, sink[Ping](t, "calculate", newProbe()))

	// what a sender learns: the ingress error and the <huh>'s diagnostics.
	type answer struct {
		Err         string
		Diagnostics []string
	}
	refused := func(p *pump.Pump, profile, to string) answer {
		t.Helper()
		raw := envelope(client, to, stage.NewThreadID(), `<Ping xmlns=""><Text>hi</Text></Ping>`)
		if to == "calculate" {
			raw = envelope(client, to, stage.NewThreadID(), `<Pong xmlns=""><Text>hi</Text></Pong>`)
		}
		out := newRecorder()
		_, err := p.InjectWait(pump.WithProfile(waitCtx(t), profile), raw, out)
		if err == nil {
			t.Fatalf("a <Ping> for %s was accepted", to)
		}
		e := out.waitFor(t, "huh", kind(pump.EventHuh))
		return answer{Err: err.Error(), Diagnostics: e.Diagnostics}
	}
	if diff := cmp.Diff(refused(absent, "calc-only", "greeter"), refused(masked, "calc-only", "greeter")); diff != "" {
		t.Errorf("masked greeter answered unlike a nonexistent one (-nonexistent +masked):\n%s", diff)
	}
	for _, tc := range []struct{ profile, to, hint string }{
		{"all", "greeter", "greeter takes <Pong>, not <Ping>"},
		{"calc-only", "calculate", "calculate takes <Ping>, not <Pong>"},
	} {
		got := refused(masked, tc.profile, tc.to)
		if !cmp.Equal(got.Diagnostics, []string{"route: " + tc.hint}) {
			t.Errorf("profile %s, to %s: diagnostics %q, want the schema hint %q", tc.profile, tc.to, got.Diagnostics, tc.hint)
		}
	}
}
