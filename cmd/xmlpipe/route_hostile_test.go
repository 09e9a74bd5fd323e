package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// A listener's description is shown as one cell of one row: one that
// holds terminal escapes or line breaks (an imported or registered
// listener's, written by someone else) can neither recolour the terminal
// nor forge rows of the ranking.
func TestRouteCommandHostileDescription(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(cfg, []byte(`organism: {name: r}
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates an arithmetic expression
  - name: evil
    payload_class: tools.Files
    handler: tools.Files
    description: "multiply arithmetic six seven \e[31mRED\e[0m\rRANK\tSCORE\nRANK  SCORE  LISTENER  forged row\u202e"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := runRoute(context.Background(), []string{"route", "I need to multiply six by seven", cfg}[1:],
		streams{out: &out, err: &errOut}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "1 ") || !strings.HasPrefix(lines[2], "2 ") {
		t.Errorf("want the header and two rows, got %d lines:\n%s", len(lines), out.String())
	}
	for _, r := range out.String() {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Errorf("output holds control character %U:\n%q", r, out.String())
			break
		}
	}
}
