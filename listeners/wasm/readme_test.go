package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readmeGuest is the Go guest of the README's "Write a tool in
// WebAssembly": the first Go block of that section.
func readmeGuest(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Write a tool in WebAssembly\n")
	if !ok {
		t.Fatal("README.md has no section \"Write a tool in WebAssembly\"")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("the section has no Go block")
	}
	src, _, ok := strings.Cut(block, "```")
	if !ok {
		t.Fatal("the section's Go block does not end")
	}
	return src
}

// TestReadmeGuestAnswersBothWays: the README's guest, built with the two
// commands it gives — a reactor and a WASI command — answers a call either
// way. (Its main was empty: the command build ran nothing and every call
// failed with "want one <CalcResult> element, got 0 elements".)
func TestReadmeGuestAnswersBothWays(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "calc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"go.mod":       "module example.com/tools\n\ngo 1.26\n",
		"calc/main.go": readmeGuest(t),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []Kind{Reactor, Command} {
		t.Run(string(kind), func(t *testing.T) {
			out := filepath.Join(dir, string(kind)+".wasm")
			args := []string{"build", "-o", out}
			if kind == Reactor {
				args = append(args, "-buildmode=c-shared")
			}
			cmd := exec.Command("go", append(args, "./calc")...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
			}
			bin, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Compile(context.Background(), "calc", bin, Sandbox{Timeout: time.Minute}, testCache, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close(context.Background()) })
			if m.Kind() != kind {
				t.Fatalf("kind = %s, want %s", m.Kind(), kind)
			}
			got, err := m.Call(context.Background(), []byte("<Calc><A>2</A><B>40</B><Op>add</Op></Calc>"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("<CalcResult><Value>42</Value></CalcResult>", string(got)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}
