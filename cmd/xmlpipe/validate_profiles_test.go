package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValidateWarnsOfUnmatchedProfileNames: a profile's listener name that
// matches no listener (a misspelling, or a federation import not linked
// yet) is a warning with its file:line (exit 0), not an error.
func TestValidateWarnsOfUnmatchedProfileNames(t *testing.T) {
	dir := t.TempDir()
	yaml := `organism: {name: t}
profiles:
  calc:
    listeners: [calculate, calculat]
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates
`
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "validate", "organism.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := []string{`warning: organism.yaml:4: profiles.calc.listeners[1]: "calculat" matches no listener ` +
		`(a federation import or a listener added while running may register it later)`}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(r.stderr), "\n")); diff != "" {
		t.Errorf("validate's warnings (-want +got):\n%s", diff)
	}
}
