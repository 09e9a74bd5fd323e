package organism

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestStartLogsPythonPeerlessAgent: an organism whose configuration holds
// a handler agent without peers — the Python server's reading: it may send
// anywhere — starts, and logs config.Organism.Warnings' located warning,
// so a user who runs it (not only one who validates it) is told why its
// forwards are refused.
func TestStartLogsPythonPeerlessAgent(t *testing.T) {
	cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: hello-world}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Receives greeting, forwards to shouter
    agent: true
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o, err := New(cfg, Options{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	want := "organism.yaml:3: listeners[0]: agent greeter has a handler but no peers"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, buf.String())
	}
}

// TestTrustedIdentityReadFromWorkdir: the reference's docs/configuration.md
// names gateways[].trusted_identity "pubkeys/search_node.ed25519.pub",
// relative to the repository root the Python server ran in; read from
// config/, where organism.yaml is, it does not exist. The error says so,
// located, and what to write.
func TestTrustedIdentityReadFromWorkdir(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "config"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "pubkeys"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "pubkeys", "search_node.ed25519.pub"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := `organism: {name: ResearchSwarm-01}
gateways:
  - name: web_search
    remote_url: "wss://trusted-search-node.example.org"
    trusted_identity: "pubkeys/search_node.ed25519.pub"
`
	if err := os.WriteFile(filepath.Join(root, "config", "organism.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	cfg, err := config.Load("config/organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg, Options{DataDir: t.TempDir()})
	if err == nil {
		t.Fatal("New succeeded with a missing trusted_identity")
	}
	for _, want := range []string{"config/organism.yaml:5: gateways[0].trusted_identity: gateway web_search",
		"not from the working directory as the Python server read them: write ../pubkeys/search_node.ed25519.pub"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestPythonToolNamesSayWhatToWrite: an agent listing the reference's tool
// names (fetch_url, read_file, key_value_get) is refused, each at its
// line, with the tool that does it here.
func TestPythonToolNamesSayWhatToWrite(t *testing.T) {
	cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: tools}
listeners:
  - name: researcher
    agent: true
    description: Researches
    prompt: You research.
    tools: [fetch_url, read_file, key_value_get]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg, Options{DataDir: t.TempDir()})
	if err == nil {
		t.Fatal("New accepted the Python tool names")
	}
	for _, want := range []string{
		`organism.yaml:7: listeners[0].tools[0]: unknown tool "fetch_url" (the Python server's name: here the tool is "fetch"; write it in tools:)`,
		`organism.yaml:7: listeners[0].tools[1]: unknown tool "read_file" (the Python server's name: here the tool is "files"; write it in tools:)`,
		`organism.yaml:7: listeners[0].tools[2]: unknown tool "key_value_get" (the Python server's name: here the tool is "key_value"; write it in tools:)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
}
