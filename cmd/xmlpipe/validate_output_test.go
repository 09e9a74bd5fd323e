package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
)

// TestValidateWarnsOfOutputRoutedByTag: a WASM listener with no response
// contract (no response:, no describe export) has its output routed by
// its root tag instead of answered to its caller — the README's calc
// without response: answers <CalcResult> that no listener takes. validate
// warns of it with the listener's line (exit 0); a listener with a
// response contract, written or described, is not warned of.
func TestValidateWarnsOfOutputRoutedByTag(t *testing.T) {
	guests := wasmtest.New(t.TempDir())
	ops, calc := guests.Build(t, "ops", true), guests.Build(t, "calc", true)
	dir := t.TempDir()
	yaml := fmt.Sprintf(`organism: {name: t}
listeners:
  - name: ops
    type: wasm
    module: %s
    description: Answers <Done>
    payload: {root: Ops, fields: [{name: Do}]}
  - name: answering-ops
    type: wasm
    module: %[1]s
    description: Answers <Done> to its caller
    payload: {root: Ops2, fields: [{name: Do}]}
    response: {root: Done, fields: [{name: OK, type: boolean}, {name: Result}, {name: Error}]}
  - name: calc
    type: wasm
    module: %s
    description: Its describe export declares its response
`, ops, calc)
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "validate", "organism.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := []string{"warning: organism.yaml:3: listeners[0]: ops declares no response: its output goes to " +
		"the listener of its root tag, not back to its caller, who gets a <huh> when no listener takes it " +
		"(declare response: to answer the caller)"}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(r.stderr), "\n")); diff != "" {
		t.Errorf("validate's warnings (-want +got):\n%s", diff)
	}
}
