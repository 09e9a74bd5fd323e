package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseWithExternalListeners checks that peers may name a listener
// given outside the configuration (in Go) as they name one of its own
// entries, and that a name that is neither is still told at its line, with
// the nearest of both kinds of name.
func TestParseWithExternalListeners(t *testing.T) {
	const doc = `organism: {name: demo}
listeners:
  - name: shouter
    payload_class: p.Shout
    handler: p.Shout
    description: Shouts
  - name: writer
    agent: true
    description: Writes
    prompt: You write.
    peers: [%s]
`
	tests := []struct {
		name     string
		peer     string
		external []string
		want     []string
	}{
		{"a go listener", "reverser", []string{"reverser"}, nil},
		{"a go listener, other case", "Reverser", []string{"reverser"}, nil},
		{"a yaml listener", "shouter", []string{"reverser"}, nil},
		{"a typo of a go listener", "revreser", []string{"reverser"},
			[]string{`demo.yaml:11: listeners[1].peers[0]: "revreser" names no listener or gateway (did you mean "reverser"?)`}},
		{"a typo of a yaml listener", "shoutr", []string{"reverser"},
			[]string{`demo.yaml:11: listeners[1].peers[0]: "shoutr" names no listener or gateway (did you mean "shouter"?)`}},
		{"a go listener not given", "reverser", nil,
			[]string{`demo.yaml:11: listeners[1].peers[0]: "reverser" names no listener or gateway`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(strings.Replace(doc, "%s", tt.peer, 1))
			cfg, err := ParseWith("demo.yaml", data, tt.external)
			if diff := cmp.Diff(tt.want, errorLines(err)); diff != "" {
				t.Fatalf("ParseWith errors (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if !cfg.NamesPeer(tt.peer) {
				t.Errorf("NamesPeer(%q) = false, want true", tt.peer)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate of the parsed configuration: %v", err)
			}
		})
	}
}

// TestLoadWithExternalListeners checks LoadWith reads the file as Load
// does and knows the external names; Load itself does not.
func TestLoadWithExternalListeners(t *testing.T) {
	path := filepath.Join(t.TempDir(), "organism.yaml")
	doc := "organism: {name: demo}\nlisteners:\n  - {name: writer, agent: true, description: Writes, prompt: You write., peers: [reverser]}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadWith(path, []string{"reverser"})
	if err != nil {
		t.Fatalf("LoadWith: %v", err)
	}
	if diff := cmp.Diff([]string{"reverser"}, cfg.External()); diff != "" {
		t.Errorf("External (-want +got):\n%s", diff)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `"reverser" names no listener or gateway`) {
		t.Errorf("Load = %v, want the unknown peer told", err)
	}
	if _, err := LoadWith(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("LoadWith of a missing file succeeded")
	}
}

// TestValidateWithExternalListeners checks ValidateWith knows the names it
// is given for that check only, as a reload of a running organism needs.
func TestValidateWithExternalListeners(t *testing.T) {
	o := Default()
	o.Listeners = []Listener{{Name: "writer", Agent: true, Description: "Writes", Prompt: "You write.", Peers: []string{"reverser"}}}
	if err := o.ValidateWith([]string{"reverser"}); err != nil {
		t.Errorf("ValidateWith: %v", err)
	}
	want := []string{`listeners[0].peers[0]: "reverser" names no listener or gateway`}
	if diff := cmp.Diff(want, errorLines(o.Validate())); diff != "" {
		t.Errorf("Validate after ValidateWith (-want +got):\n%s", diff)
	}
}

// errorLines splits a joined error into its messages (nil for none).
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}
