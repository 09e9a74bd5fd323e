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
	"go.yaml.in/yaml/v3"
)

// readmeGuest is the Go guest of the README's "Write a tool in
// WebAssembly": the first Go block of that section.
func readmeGuest(t *testing.T) string { return readmeBlock(t, "go", 0) }

// readmeBlock is the n-th (from 0) code block in lang of the README's
// "Write a tool in WebAssembly".
func readmeBlock(t *testing.T, lang string, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Write a tool in WebAssembly\n")
	if !ok {
		t.Fatal("README.md has no section \"Write a tool in WebAssembly\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for i := 0; ; i++ {
		_, block, ok := strings.Cut(section, "```"+lang+"\n")
		if !ok {
			t.Fatalf("the section has no %s block #%d", lang, n+1)
		}
		src, rest, ok := strings.Cut(block, "```")
		if !ok {
			t.Fatalf("the section's %s block #%d does not end", lang, i+1)
		}
		if i == n {
			return src
		}
		section = rest
	}
}

// buildReadmeGuest builds src as the module example.com/tools/calc, a
// reactor or a WASI command, and returns the .wasm file.
func buildReadmeGuest(t *testing.T, src string, kind Kind) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "calc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"go.mod":       "module example.com/tools\n\ngo 1.26\n",
		"calc/main.go": src,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
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
	return out
}

// TestReadmeDescribeMatchesYAML: the README's describe export, added to its
// guest, builds, and the contract it writes is the payload: and response:
// of the README's organism.yaml entry — so a module registered over OOB,
// which has no entry, gets the same calc. (The README only said a reactor
// "may export describe"; ctl register-listener of its guest was refused
// with "no payload contract".)
func TestReadmeDescribeMatchesYAML(t *testing.T) {
	wasmFile := buildReadmeGuest(t, readmeGuest(t)+"\n"+readmeBlock(t, "go", 1), Reactor)
	bin, err := os.ReadFile(wasmFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := Compile(ctx, "calc", bin, Sandbox{Timeout: time.Minute}, testCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	out, described, err := m.Describe(ctx)
	if err != nil || !described {
		t.Fatalf("Describe = %v, %v; want the contract", described, err)
	}
	got, err := ParseContract(out)
	if err != nil {
		t.Fatalf("ParseContract(%q): %v", out, err)
	}
	var cfg struct {
		Listeners []Contract `yaml:"listeners"`
	}
	if err := yaml.Unmarshal([]byte(readmeBlock(t, "yaml", 0)), &cfg); err != nil || len(cfg.Listeners) != 1 {
		t.Fatalf("the README's organism.yaml entry: %v (%d listeners)", err, len(cfg.Listeners))
	}
	if diff := cmp.Diff(cfg.Listeners[0], got); diff != "" {
		t.Errorf("describe's contract differs from the organism.yaml entry (-yaml +describe):\n%s", diff)
	}
}

// TestReadmeGuestAnswersBothWays: the README's guest, built with the two
// commands it gives — a reactor and a WASI command — answers a call either
// way. (Its main was empty: the command build ran nothing and every call
// failed with "want one <CalcResult> element, got 0 elements".)
func TestReadmeGuestAnswersBothWays(t *testing.T) {
	src := readmeGuest(t)
	for _, kind := range []Kind{Reactor, Command} {
		t.Run(string(kind), func(t *testing.T) {
			out := buildReadmeGuest(t, src, kind)
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
