package organism

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func writeOrganism(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestToolsListedByAnAgentBecomeListeners(t *testing.T) {
	path := writeOrganism(t, `organism: {name: tools-test}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: greets
    agent: true
    peers: [shouter]
    tools: [calculate]
    tool_config:
      calculate: {max_exponent: 3}
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: shouts
`)
	o, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Pump.Lookup("calculate"); !ok {
		t.Fatal("no calculate listener")
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	ctx := context.Background()
	ask := func(from, expr string) string {
		t.Helper()
		c := make(collector, 64)
		env := xmlpipe.AppendEnvelope(nil, from, "calculate", xmlpipe.NewThreadID(),
			[]byte(`<Calculate xmlns=""><Expression>`+expr+`</Expression></Calculate>`))
		if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
			t.Fatal(err)
		}
		e := c.await(t, pump.EventReply, pump.EventHuh)
		if e.Kind != pump.EventReply {
			t.Fatalf("%s: %s %s", expr, e.Kind, e.Error)
		}
		return string(e.Envelope)
	}
	if got := ask("tester", "2 ** 10"); !strings.Contains(got, "<Value>1024</Value>") {
		t.Fatalf("got %s", got)
	}
	if got := ask("tester", "2 ** 10 ** 10"); !strings.Contains(got, "<Error>over a limit: exponent") {
		t.Fatalf("got %s", got)
	}

	// An unknown tool is an assembly error naming the known ones.
	bad := writeOrganism(t, `organism: {name: bad}
listeners:
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: shouts
    tools: [teleport]
`)
	if _, err := Load(bad, Options{}); err == nil || !strings.Contains(err.Error(), `unknown tool "teleport" (known: calculate`) {
		t.Fatalf("err = %v", err)
	}
}

func TestToolPolicy(t *testing.T) {
	p := toolPolicy{"agent": {"files": {AllowedPaths: []string{"/a"}}}, "files": {"files": {AllowedPaths: []string{"/b"}}}}
	if c := p.Config("Agent", "FILES"); len(c.AllowedPaths) != 1 || c.AllowedPaths[0] != "/a" {
		t.Fatalf("caller's entry: %+v", c)
	}
	if c := p.Config("mcp", "files"); len(c.AllowedPaths) != 1 || c.AllowedPaths[0] != "/b" {
		t.Fatalf("tool's entry: %+v", c)
	}
	if c := p.Config("mcp", "calculate"); c.MaxExponent != 0 || c.AllowedPaths != nil {
		t.Fatalf("defaults: %+v", c)
	}
}
