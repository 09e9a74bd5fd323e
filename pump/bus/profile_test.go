package bus

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// profiledOrganism has a greeter and calculate, and a profile reaching
// calculate alone.
func profiledOrganism(o organism.Options) (*organism.Organism, error) {
	cfg, err := config.Parse("profiled.yaml", []byte(`organism: {name: profiled}
profiles:
  calc:
    listeners: [calculate]
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
`))
	if err != nil {
		return nil, err
	}
	return organism.New(cfg, o)
}

// TestProfileMasksAPI: a user whose profile holds only calculate reaches
// calculate and not the greeter, and the greeter does not exist for them:
// the listing leaves it out, and a lookup or a send to it is answered word
// for word as one to a listener that does not exist. A user without a
// profile sees both.
func TestProfileMasksAPI(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	if err := f.auth.SetProfile(context.Background(), "calcuser", "Not A Profile"); err == nil {
		t.Error("SetProfile took a malformed profile name")
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)

	names := func(token string) []string {
		status, body, _ := f.do("GET", "/api/v1/agents", token, nil)
		if status != 200 {
			t.Fatalf("agents: %d %v", status, body)
		}
		var out []string
		for _, a := range body["agents"].([]any) {
			out = append(out, a.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(calc); !slices.Contains(got, "calculate") || slices.Contains(got, "greeter") {
		t.Errorf("calc user lists %v, want calculate and no greeter", got)
	}
	if got := names(open); !slices.Contains(got, "calculate") || !slices.Contains(got, "greeter") {
		t.Errorf("user without a profile lists %v, want both", got)
	}

	for _, path := range []string{"/api/v1/agents/%s", "/api/v1/agents/%s/schema", "/api/v1/agents/%s/config"} {
		sg, bg, _ := f.do("GET", strings.Replace(path, "%s", "greeter", 1), calc, nil)
		sn, bn, _ := f.do("GET", strings.Replace(path, "%s", "no-such-listener", 1), calc, nil)
		if sg != 404 || sg != sn || bg["error"] != bn["error"] {
			t.Errorf("%s: greeter %d %v, a nonexistent listener %d %v", path, sg, bg, sn, bn)
		}
		if s, _, _ := f.do("GET", strings.Replace(path, "%s", "greeter", 1), open, nil); s != 200 {
			t.Errorf("%s: the greeter is %d for a user without a profile", path, s)
		}
	}

	sg, bg, _ := f.do("POST", "/api/v1/inject", calc, map[string]any{"to": "greeter", "payload": map[string]string{"name": "Ann"}})
	sn, bn, _ := f.do("POST", "/api/v1/inject", calc, map[string]any{"to": "nobody", "payload": map[string]string{"name": "Ann"}})
	eg, _ := bg["error"].(string)
	en, _ := bn["error"].(string)
	if sg != sn || sg == 200 || strings.Replace(eg, "greeter", "nobody", 1) != en {
		t.Errorf("send to the masked greeter: %d %v; to a nonexistent listener: %d %v", sg, bg, sn, bn)
	}
	if s, b, _ := f.do("POST", "/api/v1/inject", calc, map[string]any{"to": "calculate",
		"payload": map[string]string{"expression": "6 * 7"}}); s != 200 {
		t.Errorf("calc user cannot reach calculate: %d %v", s, b)
	}
	stream := f.dial("/api/v1/ws", calc)
	hello := readFrame(t, stream)
	if agents, _ := hello["agents"].([]any); !slices.Contains(agents, any("calculate")) || slices.Contains(agents, any("greeter")) {
		t.Errorf("event stream connected frame for the calc user: %v", hello)
	}
	c := f.dial("/ws", calc)
	readFrame(t, c)
	writeFrame(t, c, frame{"type": "send", "raw": "@greeter Ann"})
	// The masked greeter reads as a nonexistent listener, and neither
	// refusal's list of what is available names it.
	const available = ". Available: ['system.boot', 'system.todo', 'system.todo-complete', 'core.request-schema', " +
		"'core.request-example', 'core.request-prompt', 'core.list-capabilities', 'calculate']"
	wantError("Unknown target: greeter"+available, "unknown_target")(t, readFrame(t, c))
	writeFrame(t, c, frame{"type": "send", "raw": "@nobody Ann"})
	wantError("Unknown target: nobody"+available, "unknown_target")(t, readFrame(t, c))
	if s, b, _ := f.do("POST", "/api/v1/inject", open, map[string]any{"to": "greeter",
		"payload": map[string]string{"name": "Ann"}}); s != 200 {
		t.Errorf("user without a profile cannot reach the greeter: %d %v", s, b)
	}
}
