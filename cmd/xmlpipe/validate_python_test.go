package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValidateWarnsOfPythonPeerlessAgent: the reference's config/organism.yaml
// of commit 8fa92b8 declares greeter as an agent without peers, which the
// Python server let send to shouter; here its every forward would be a peer
// violation. validate still succeeds (exit 0), printing the routing table,
// and warns of it on stderr with the listener's line and what to write.
func TestValidateWarnsOfPythonPeerlessAgent(t *testing.T) {
	dir := t.TempDir()
	yaml := `organism:
  name: hello-world
  port: 8765
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
`
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "validate", "organism.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Greeting → greeter") {
		t.Errorf("stdout lacks the routing table:\n%s", r.stdout)
	}
	want := []string{"warning: organism.yaml:5: listeners[0]: agent greeter has a handler but no peers: an agent " +
		"may send only to the listeners its peers name (the Python server let an agent without peers send " +
		"anywhere), so every message its handler sends to another listener is refused as a peer violation; list " +
		"the listeners it sends to under peers:, or remove agent: true if it is no LLM agent"}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(r.stderr), "\n")); diff != "" {
		t.Errorf("validate's warnings (-want +got):\n%s", diff)
	}
}
