package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestProfilesParse(t *testing.T) {
	src := `organism: {name: x}
profiles:
  calc-only:
    description: arithmetic alone
    listeners: [calculate]
    network: []
  web:
    listeners: ["fetch*", greeter]
    network: ["*.example.com:443"]
  open:
    listeners: ["*"]
listeners:
  - name: research-agent
    agent: true
    description: researches
    prompt: You research.
    profile: web
    callable:
      description: Deep research on a topic
      parameters:
        - {name: query, type: string, required: true}
        - {name: depth, type: integer}
      requires: [calculate]
      timeout: 2h
gateways:
  - {name: peer, trusted_identity: peer.pub, profile: calc-only}
`
	o, err := Parse("/o/organism.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[string]Profile{
		"calc-only": {Description: "arithmetic alone", Listeners: []string{"calculate"}, Network: NetworkList{Set: true, Addrs: []string{}}},
		"web":       {Listeners: []string{"fetch*", "greeter"}, Network: NetworkList{Set: true, Addrs: []string{"*.example.com:443"}}},
		"open":      {Listeners: []string{"*"}},
	}
	if diff := cmp.Diff(want, o.Profiles); diff != "" {
		t.Errorf("profiles (-want +got):\n%s", diff)
	}
	if got := o.Profiles["open"].Network.Allowed(); got != nil {
		t.Errorf("unset network allows %q, want nil (no restriction)", got)
	}
	if got := o.Profiles["calc-only"].Network.Allowed(); got == nil || len(got) != 0 {
		t.Errorf("empty network allows %q, want none", got)
	}
	if diff := cmp.Diff([]string{"calc-only", "open", "web"}, o.ProfileNames()); diff != "" {
		t.Error(diff)
	}
	l := o.Listeners[0]
	if l.Profile != "web" || l.CallRoot() != "ResearchAgentCall" || CallName(l.Name) != "research-agent.call" {
		t.Errorf("listener %s: profile %q, root %q", l.Name, l.Profile, l.CallRoot())
	}
	if c := l.Callable; len(c.Parameters) != 2 || !c.Parameters[0].Required || c.Parameters[1].Type != "integer" ||
		c.Timeout.D() != 2*time.Hour {
		t.Errorf("callable %+v", c)
	}
	if o.Gateways[0].Profile != "calc-only" {
		t.Errorf("gateway profile %q", o.Gateways[0].Profile)
	}
	if CallProfile("Research-Agent") != "callable:research-agent" {
		t.Error(CallProfile("Research-Agent"))
	}
}

// TestCallableTimeoutChecked: a negative callable.timeout is reported
// with its file:line; a zero one means the default.
func TestCallableTimeoutChecked(t *testing.T) {
	_, err := Parse("/o/organism.yaml", []byte(`organism: {name: x}
listeners:
  - name: researcher
    agent: true
    description: researches
    prompt: You research.
    callable:
      description: Deep research on a topic
      timeout: -5m
`))
	for _, want := range []string{`organism.yaml:9`, `listeners[0].callable.timeout`, `must not be negative, got -5m`,
		`the default, 30m`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// TestProfileReferenceCase: profile names are lower-case keys matched
// exactly; a reference in another case names no profile, and the error
// says which one was meant.
func TestProfileReferenceCase(t *testing.T) {
	_, err := Parse("/o/organism.yaml", []byte(`organism: {name: x}
profiles:
  calc: {listeners: [greeter]}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: Greets, profile: Calc}
gateways:
  - {name: peer, trusted_identity: peer.pub, profile: CALC}
  - {name: other, trusted_identity: other.pub, profile: nobody}
`))
	for _, want := range []string{
		`organism.yaml:5: listeners[0].profile: no profile "Calc" (did you mean "calc"?) (profiles: calc)`,
		`organism.yaml:7: gateways[0].profile: no profile "CALC" (did you mean "calc"?) (profiles: calc)`,
		`gateways[1].profile: no profile "nobody" (profiles: calc)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// TestProfileReferenceWithoutProfiles: a profile named in an organism
// that defines none says that a profiles: section is needed, as `route
// --profile` and `users profile` do. (It read `no profile "peers"
// (profiles: )`, the README's callable example walked as written.)
func TestProfileReferenceWithoutProfiles(t *testing.T) {
	_, err := Parse("/o/organism.yaml", []byte(`organism: {name: x}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: Greets}
gateways:
  - {name: a, trusted_identity: a.pub, profile: peers, export: [Greeting]}
`))
	want := `organism.yaml:5: gateways[0].profile: no profile "peers": this organism defines no profiles (a profiles: section is needed)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("want %q in %v", want, err)
	}
}

func TestCallRoot(t *testing.T) {
	for name, want := range map[string]string{"research-agent": "ResearchAgentCall", "calc": "CalcCall",
		"weather.forecast": "WeatherForecastCall", "9lives": "LivesCall", "a_b2c": "AB2cCall"} {
		if got := (Listener{Name: name}).CallRoot(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if got := (Listener{Name: "x", Callable: Callable{Root: "Ask"}}).CallRoot(); got != "Ask" {
		t.Error(got)
	}
}

// TestMCPServerNetwork: a mount's server.network is read like a profile's
// (absent: undeclared; [] : none) and a malformed entry is reported with
// its file:line.
func TestMCPServerNetwork(t *testing.T) {
	src := `organism: {name: x}
listeners:
  - name: gh
    type: mcp
    description: GitHub tools
    server: {command: [gh-mcp], network: ["api.github.com:443", "*.githubusercontent.com:*"]}
  - name: local
    type: mcp
    description: local tools
    server: {command: [local-mcp], network: []}
  - name: wild
    type: mcp
    description: anything
    server: {url: "http://127.0.0.1:9000/mcp"}
`
	o, err := Parse("/o/organism.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := [][]string{o.Listeners[0].Server.Network.Allowed(), o.Listeners[1].Server.Network.Allowed(),
		o.Listeners[2].Server.Network.Allowed()}
	want := [][]string{{"api.github.com:443", "*.githubusercontent.com:*"}, {}, nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("networks (-want +got):\n%s", diff)
	}
	if got[2] != nil || got[1] == nil {
		t.Errorf("absent must be nil, [] empty: %#v", got)
	}
	_, err = Parse("/o/organism.yaml", []byte(`organism: {name: x}
listeners:
  - name: gh
    type: mcp
    description: GitHub tools
    server:
      command: [gh-mcp]
      network: ["api.github.com", "a*b.com:443"]
`))
	for _, want := range []string{`organism.yaml:8`, `listeners[0].server.network[0]`, `want host:port, got "api.github.com"`,
		`listeners[0].server.network[1]`, `a wildcard host is * or *.domain`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}
