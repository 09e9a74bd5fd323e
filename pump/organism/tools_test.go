package organism

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/calculate"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
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
		env := stage.AppendEnvelope(nil, from, "calculate", stage.NewThreadID(),
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
	p := toolPolicy{entries: map[string]map[string]config.ToolConfig{"agent": {"files": {AllowedPaths: []string{"/a"}}},
		"files": {"files": {AllowedPaths: []string{"/b"}}}}, dataDir: "/var/lib/xmlpipe"}
	if c := p.Config("Agent", "FILES"); len(c.AllowedPaths) != 1 || c.AllowedPaths[0] != "/a" {
		t.Fatalf("caller's entry: %+v", c)
	}
	if c := p.Config("mcp", "files"); len(c.AllowedPaths) != 1 || c.AllowedPaths[0] != "/b" {
		t.Fatalf("tool's entry: %+v", c)
	}
	if c := p.Config("agent", "files"); c.DataDir != "/var/lib/xmlpipe" {
		t.Fatalf("data directory: %+v", c)
	}
	if c := p.Config("mcp", "calculate"); c.MaxExponent != 0 || c.AllowedPaths != nil || c.DataDir != "/var/lib/xmlpipe" {
		t.Fatalf("defaults: %+v", c)
	}
}

// Ask is the text input of the test agent (as an LLM agent's input is text).
type Ask struct {
	Text string
}

// textAgent asks calculate and records the answer it gets back.
type textAgent struct{ got chan string }

func (a *textAgent) Handle(_ context.Context, p *Ask, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	if md.From == "calculate" {
		a.got <- p.Text
		return nil, nil
	}
	return xmlpipe.Send("calculate", &calculate.Calculate{Expression: p.Text}), nil
}

func TestAgentGetsToolResultsAsText(t *testing.T) {
	c := catalog.Builtin()
	a := &textAgent{got: make(chan string, 1)}
	c.AddPayload(catalog.Payload{Name: "test.Ask", Type: reflect.TypeFor[Ask]()})
	c.AddHandler(catalog.Handler{Name: "test.Agent", Takes: reflect.TypeFor[Ask](),
		New: func(catalog.Env) xmlpipe.Handler { return xmlpipe.Typed(a.Handle) }})
	path := writeOrganism(t, `organism: {name: agent-tools}
listeners:
  - name: thinker
    payload_class: test.Ask
    handler: test.Agent
    description: asks calculate
    agent: true
    tools: [calculate]
`)
	o, err := Load(path, Options{Catalog: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	if _, err := o.Pump.Send(context.Background(), "tester", "thinker", &Ask{Text: "6 * 7"}, make(collector, 16)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-a.got:
		if got != `{"Expression":"6 * 7","Value":"42"}` {
			t.Fatalf("the agent got %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's answer never reached the agent")
	}
}

// TestToolConfigCheckedAtLoad: what only a tool can judge in its
// tool_config — a missing root, a root over the data directory, a bad
// argument pattern, run_as root — is a configuration error with its
// file:line when the organism is built, not a refusal at call time.
func TestToolConfigCheckedAtLoad(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"notes", "data"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	head := `organism: {name: t, data_dir: data}
listeners:
  - name: helper
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: greets
    tools: [files, run_command, key_value]
    tool_config:
`
	load := func(entry string) error {
		path := filepath.Join(dir, "organism.yaml")
		if err := os.WriteFile(path, []byte(head+entry+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := Load(path, Options{})
		if err == nil {
			_ = o.Shutdown(context.Background())
		}
		return err
	}
	if err := load(`      files: {allowed_paths: [notes]}
      run_command: {allowed_commands: [date, {command: wc, args: ["-l", "{file}"]}], allowed_paths: [notes]}
      key_value: {shared_namespaces: [team]}`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ entry, want string }{
		{`      files: {allowed_paths: [missing]}`, "organism.yaml:9: listeners[0].tool_config.files: allowed_paths: " +
			filepath.Join(dir, "missing") + " does not exist"},
		{`      files: {allowed_paths: [data]}`, "data directory"},
		{`      files: {allowed_paths: ["."]}`, "data directory"},
		{`      run_command: {allowed_commands: [{command: date, args: ["{path}"]}]}`, "organism.yaml:9: listeners[0].tool_config.run_command: run_command: allowed command date: argument pattern \"{path}\": unknown placeholder"},
		{`      run_command: {allowed_commands: [{command: wc, args: ["{file}"]}]}`, "needs allowed_paths"},
		{`      run_command: {allowed_commands: [date], run_as: root}`, "never run as root"},
		{`      key_value: {shared_namespaces: ["thread:x"]}`, "shared_namespaces"},
	} {
		if err := load(tc.entry); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\nerr = %v\nwant %q", tc.entry, err, tc.want)
		}
	}
	// run_as: self runs programs as the organism's own user: under root
	// every call would be refused, so the load is (elsewhere it loads).
	self := `      run_command: {allowed_commands: [date], run_as: self}`
	err := load(self)
	if os.Geteuid() != 0 {
		if err != nil {
			t.Errorf("%s, not root:\n%v", self, err)
		}
		return
	}
	want := "organism.yaml:9: listeners[0].tool_config.run_command: run_command: cannot run the program without " +
		"the organism's privileges: run_as self would run programs as root; name an unprivileged user"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("%s, as root:\nerr = %v\nwant %q", self, err, want)
	}
}

// TestToolConfigCarriesQuotas: the files and key_value totals (and
// key_value's conversation_ttl) written in tool_config reach the tools.
func TestToolConfigCarriesQuotas(t *testing.T) {
	c := toolConfig(config.ToolConfig{MaxDiskBytes: 1 << 20, MaxKeys: 10, MaxTotalBytes: 4096,
		ConversationTTL: config.Duration(time.Hour)}, "")
	if c.MaxDiskBytes != 1<<20 || c.MaxKeys != 10 || c.MaxTotalBytes != 4096 || c.ConversationTTL != time.Hour {
		t.Fatalf("tools.Config %+v", c)
	}
}
