package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWarnsHandlerAgentWithoutPeers: the Python server enforces peers only
// for an agent whose peers list is non-empty (python-reference.md §4.8,
// Q35), so its configurations hold handler agents without peers that
// forward anywhere — the reference's own config/organism.yaml of commit
// 8fa92b8 has greeter (agent: true, no peers) sending to shouter. xmlpipe
// lets an agent reach only its peers (DESIGN §3), so such a handler's every
// forward would be refused at run time; the configuration says so, located,
// and what to write instead.
func TestWarnsHandlerAgentWithoutPeers(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "reference 8fa92b8: handler agents without peers",
			yaml: `organism: {name: hello-world}
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
    agent: true
    peers: []
`,
			want: []string{
				"organism.yaml:3: listeners[0]: agent greeter has a handler but no peers: an agent may send only to " +
					"the listeners its peers name (the Python server let an agent without peers send anywhere), so " +
					"every message its handler sends to another listener is refused as a peer violation; list the " +
					"listeners it sends to under peers:, or remove agent: true if it is no LLM agent",
				"organism.yaml:8: listeners[1]: agent shouter has a handler but no peers: an agent may send only to " +
					"the listeners its peers name (the Python server let an agent without peers send anywhere), so " +
					"every message its handler sends to another listener is refused as a peer violation; list the " +
					"listeners it sends to under peers:, or remove agent: true if it is no LLM agent",
			},
		},
		{
			name: "reference HEAD: greeter lists its peer",
			yaml: `listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greeting agent - forwards to shouter
    agent: true
    peers: [shouter]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
`,
		},
		{
			name: "an LLM agent (no handler) without peers only answers: fine",
			yaml: `listeners:
  - name: poet
    agent: true
    description: Writes poems
    prompt: You write poems.
`,
		},
		{
			name: "a handler agent with tools reaches them",
			yaml: `listeners:
  - name: calc-agent
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Uses a tool
    agent: true
    tools: [calculate]
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("organism.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, o.Warnings()); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWarnsPathsReadFromWorkdir: the Python server reads relative paths
// from its working directory, the repository root (python-reference.md
// Q38), so its docs/configuration.md writes organism.identity
// "config/identity/private.ed25519" and tls "certs/fullchain.pem" for a
// file at config/organism.yaml. xmlpipe reads them from the file's
// directory, where they do not exist: the configuration says where the
// file is missing and, when the working directory holds it, what to write.
func TestWarnsPathsReadFromWorkdir(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"config/identity/private.ed25519", "certs/fullchain.pem"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yaml := `organism:
  name: ResearchSwarm-01
  identity: "config/identity/private.ed25519"
  tls:
    cert: "certs/fullchain.pem"
    key: "certs/privkey.pem"
`
	if err := os.WriteFile(filepath.Join(root, "config", "organism.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	o, err := Load("config/organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "config")
	want := []string{
		"config/organism.yaml:3: organism.identity: " + filepath.Join(dir, "config/identity/private.ed25519") +
			" does not exist, so the organism has no identity (gateways cannot link): create it with xmlpipe keys " +
			"init, or correct the path; relative paths in organism.yaml are read from its directory, " + dir +
			", not from the working directory as the Python server read them: write identity/private.ed25519",
		"config/organism.yaml:5: organism.tls.cert: " + filepath.Join(dir, "certs/fullchain.pem") +
			" does not exist, so xmlpipe run cannot start; relative paths in organism.yaml are read from its " +
			"directory, " + dir + ", not from the working directory as the Python server read them: write " +
			"../certs/fullchain.pem",
		"config/organism.yaml:6: organism.tls.key: " + filepath.Join(dir, "certs/privkey.pem") +
			" does not exist, so xmlpipe run cannot start",
	}
	if diff := cmp.Diff(want, o.Warnings()); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	// The hint is also what a missing gateways[].trusted_identity is told.
	if got, want := o.WorkdirHint(filepath.Join(dir, "config/identity/private.ed25519")),
		"; relative paths in organism.yaml are read from its directory, "+dir+
			", not from the working directory as the Python server read them: write identity/private.ed25519"; got != want {
		t.Errorf("WorkdirHint = %q, want %q", got, want)
	}
}

// TestPythonToolHint: the reference's 18 native tools (agentserver/tools,
// python-reference.md §9.1) have other names here, several folded into one
// tool; an agent's tools: naming one is told the tool to write. Other
// names get nothing.
func TestPythonToolHint(t *testing.T) {
	tests := []struct{ name, want string }{
		{"fetch_url", ` (the Python server's name: here the tool is "fetch"; write it in tools:)`},
		{"read_file", ` (the Python server's name: here the tool is "files"; write it in tools:)`},
		{"Delete_File", ` (the Python server's name: here the tool is "files"; write it in tools:)`},
		{"list_dir", ` (the Python server's name: here the tool is "files"; write it in tools:)`},
		{"key_value_set", ` (the Python server's name: here the tool is "key_value"; write it in tools:)`},
		{"librarian_query", ` (the Python server's name: here the tool is "librarian"; write it in tools:)`},
		{"calculate", ""},
		{"fetch", ""},
		{"frobnicate", ""},
	}
	for _, tc := range tests {
		if got := PythonToolHint(tc.name); got != tc.want {
			t.Errorf("PythonToolHint(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestWarningsOfOrganismBuiltInCode: a configuration built in code has no
// file; its warnings begin with the path, as its errors do.
func TestWarningsOfOrganismBuiltInCode(t *testing.T) {
	o := Default()
	o.Listeners = append(o.Listeners, Listener{Name: "greeter", PayloadClass: "hello.Greeting",
		Handler: "hello.Greeter", Description: "Greets", Agent: true, Type: GoListener})
	want := []string{"listeners[0]: agent greeter has a handler but no peers: an agent may send only to the " +
		"listeners its peers name (the Python server let an agent without peers send anywhere), so every " +
		"message its handler sends to another listener is refused as a peer violation; list the listeners it " +
		"sends to under peers:, or remove agent: true if it is no LLM agent"}
	if diff := cmp.Diff(want, o.Warnings()); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
}
