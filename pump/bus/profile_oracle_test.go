package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestProfileNoTopologyOracle: over TLS, a user whose profile holds only
// calculate is answered for the greeter (which exists outside it) word for
// word as for a listener that does not exist — on POST /api/v1/inject and
// on the event stream's inject — whatever the payload, and reads a schema
// hint only for a listener its profile allows; a user without a profile
// keeps every detail.
func TestProfileNoTopologyOracle(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)

	const wrong = "<Unrelated><X>1</X></Unrelated>" // a payload no listener takes
	rest := func(token, to string) string {
		status, body, _ := f.do("POST", "/api/v1/inject", token, map[string]any{"to": to, "payload": wrong})
		return fmt.Sprint(status, " ", body["error"], " ", body["diagnostics"])
	}
	stream := func(token, to string) string {
		c := f.dial("/api/v1/ws", token)
		defer c.Close()
		readFrame(t, c)
		writeFrame(t, c, frame{"cmd": "inject", "to": to, "payload": wrong})
		// The command's answer, not an event: a user who sees every
		// thread may first get the error event of an earlier refusal
		// (another user's), which carries its kind.
		got := readFrame(t, c)
		for got["kind"] != nil {
			got = readFrame(t, c)
		}
		return fmt.Sprint(got["event"], " ", got["error"], " ", got["diagnostics"])
	}
	for name, answer := range map[string]func(token, to string) string{"inject": rest, "stream": stream} {
		masked, absent := answer(calc, "greeter"), answer(calc, "nobody")
		if diff := cmp.Diff(strings.ReplaceAll(absent, "nobody", "greeter"), masked); diff != "" {
			t.Errorf("%s: the masked greeter is answered unlike a nonexistent listener (-nonexistent +masked):\n%s",
				name, diff)
		}
		if strings.Contains(masked, "takes") {
			t.Errorf("%s: the calc user got a schema hint for the greeter: %s", name, masked)
		}
		if got := answer(calc, "calculate"); !strings.Contains(got, "calculate takes <") {
			t.Errorf("%s: the calc user got no schema hint for calculate: %s", name, got)
		}
		if got := answer(open, "greeter"); !strings.Contains(got, "greeter takes <") {
			t.Errorf("%s: a user without a profile got no schema hint for the greeter: %s", name, got)
		}
	}
}
