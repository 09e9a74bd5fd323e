package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestNotAModuleSaysWhatItIs: a file that is no WebAssembly binary — the
// Go source, a text-format module, an empty file — is refused with
// ErrNotModule and a hint of how to build one, not wazero's bare "invalid
// magic number".
func TestNotAModuleSaysWhatItIs(t *testing.T) {
	for _, tc := range []struct {
		name, file, hint string
	}{
		{"go source", "//go:build wasip1\n\npackage main\n", "GOOS=wasip1 GOARCH=wasm"},
		{"text format", "(module (func (export \"handle\")))", "text format"},
		{"empty", "", "empty"},
		{"short", "\x00as", "GOOS=wasip1 GOARCH=wasm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(context.Background(), "calc.wasm", []byte(tc.file), Sandbox{}, nil, nil)
			if !errors.Is(err, ErrNotModule) || !strings.Contains(err.Error(), tc.hint) ||
				!strings.Contains(err.Error(), "calc.wasm") {
				t.Errorf("err = %v, want ErrNotModule naming the file and %q", err, tc.hint)
			}
		})
	}
}

// TestEmptyDescribeSaysSo: a describe export that writes nothing (or only
// blank lines) is told so, not "EOF".
func TestEmptyDescribeSaysSo(t *testing.T) {
	for _, out := range []string{"", "\n  \n"} {
		_, err := ParseContract([]byte(out))
		if !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), "describe wrote nothing") {
			t.Errorf("ParseContract(%q) = %v, want ErrContract saying describe wrote nothing", out, err)
		}
	}
}
