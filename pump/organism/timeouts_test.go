package organism

import (
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestListenerTimeouts: organism.yaml's listener timeout reaches the pump;
// without one, a listener gets the pump's default for its kind, raised to
// what its configuration lets one call take plus 10 s.
func TestListenerTimeouts(t *testing.T) {
	path := writeOrganism(t, `organism: {name: timeouts}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: greets
    agent: true
    peers: [shouter]
    tools: [calculate, run_command, fetch]
    tool_config:
      run_command: {allowed_commands: [date], timeout: 5m}
      fetch: {timeout: 10s}
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: shouts
    timeout: 90
  - name: printer
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: prints
`)
	o, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"greeter":     pump.DefaultAgentTimeout,
		"shouter":     90 * time.Second,
		"printer":     pump.DefaultHandlerTimeout,
		"calculate":   pump.DefaultHandlerTimeout,
		"run_command": 5*time.Minute + timeoutMargin,
		"fetch":       pump.DefaultHandlerTimeout,
		"system.boot": pump.DefaultHandlerTimeout,
	}
	got := map[string]time.Duration{}
	for _, l := range o.Pump.Listeners() {
		got[l.Name] = l.Timeout
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: timeout %s, want %s", name, got[name], w)
		}
	}
}
