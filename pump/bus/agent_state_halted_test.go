package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestAgentStateHalted: while the organism is halted, a listener the halt
// stopped reads "halted", not "idle" — the dashboard colours it by this
// state — and once resumed it reads as before.
func TestAgentStateHalted(t *testing.T) {
	f := newFixture(t)
	ada := f.loginAs("ada", auth.Admin)
	states := func() map[string]any {
		t.Helper()
		out := map[string]any{}
		for _, name := range []string{"greeter", "shouter"} {
			status, body, _ := f.do("GET", "/api/v1/agents/"+name, ada, nil)
			if status != 200 {
				t.Fatalf("GET agent %s: %d %v", name, status, body)
			}
			out[name] = body["state"]
		}
		return out
	}

	if status, body, _ := f.do("POST", "/api/v1/organism/halt", ada, map[string]string{"scope": "all"}); status != 200 {
		t.Fatalf("halt: %d %v", status, body)
	}
	thread := f.inject(ada, "greeter", map[string]string{"name": "Kim"})
	if diff := cmp.Diff(map[string]any{"greeter": "halted", "shouter": "halted"}, states()); diff != "" {
		t.Errorf("while halted (-want +got):\n%s", diff)
	}

	done := f.watchCompletions()
	if status, body, _ := f.do("POST", "/api/v1/organism/resume", ada, nil); status != 200 {
		t.Fatalf("resume: %d %v", status, body)
	}
	done.wait(t, thread)
	if diff := cmp.Diff(map[string]any{"greeter": "idle", "shouter": "idle"}, states()); diff != "" {
		t.Errorf("after resume and the conversation's completion (-want +got):\n%s", diff)
	}
}
