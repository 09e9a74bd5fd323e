package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
)

func TestWasmCheck(t *testing.T) {
	g := wasmtest.New(t.TempDir())
	reactor, command := g.Build(t, "calc", true), g.Build(t, "calc", false)
	junk := filepath.Join(t.TempDir(), "junk.wasm")
	if err := os.WriteFile(junk, []byte("not wasm"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		out  []string // in stdout (code 0) or stderr
	}{
		{"reactor", []string{reactor}, 0, []string{"kind: reactor", "payload <Calc> schema:", `<xs:element name="A" type="xs:double">`,
			"response <CalcResult> schema:", "example:"}},
		{"command", []string{command}, 0, []string{"kind: command", "contract: not read"}},
		{"memory", []string{"--memory-mb", "1", reactor}, 1, []string{"over memory_mb 1", "memory_mb of at least"}},
		{"junk", []string{junk}, 1, []string{"xmlpipe wasm check:"}},
		{"missing", []string{filepath.Join(t.TempDir(), "nope.wasm")}, 1, []string{"no such file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, t.TempDir(), "", append([]string{"wasm", "check"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			text := r.stdout
			if tc.code != 0 {
				text = r.stderr
			}
			for _, want := range tc.out {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
		})
	}
	if r := runBinary(t, t.TempDir(), "", "wasm"); r.code != 2 {
		t.Fatalf("no subcommand: exit %d", r.code)
	}
}
