package organism_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeBlock returns the fenced block that follows the marker line
// "<!-- use-from-go: name … -->" in the README.
func readmeBlock(t *testing.T, readme, name string) string {
	t.Helper()
	marker := "<!-- use-from-go: " + name
	i := strings.Index(readme, marker)
	if i < 0 {
		t.Fatalf("README.md has no %q marker", marker)
	}
	rest := readme[i:]
	open := strings.Index(rest, "\n```")
	if open < 0 {
		t.Fatalf("no fenced block after %q", marker)
	}
	rest = rest[open+4:]
	rest = rest[strings.Index(rest, "\n")+1:] // past the info string (go)
	end := strings.Index(rest, "\n```")
	if end < 0 {
		t.Fatalf("the block after %q is not closed", marker)
	}
	return rest[:end+1]
}

// goTool is the go command (go test puts its own first on PATH).
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the README's program with")
	}
	return p
}

// The README's "Use it from Go" program compiles against the module as it
// is and prints what the README says: it is extracted, written into a
// module of its own that requires this one through a replace directive,
// built (offline: the module cache already holds every dependency) and run.
func TestReadmeProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	program := readmeBlock(t, string(readme), "program")
	want := readmeBlock(t, string(readme), "output")

	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/readme\n\ngo 1.26.0\n\nrequire github.com/xml-pipeline/xmlpipe v0.0.0\n\n"+
		"replace github.com/xml-pipeline/xmlpipe => %s\n", root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"main.go": []byte(program), "go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "readme")
	build := exec.CommandContext(ctx, goTool(t), "build", "-o", bin, ".")
	build.Dir = dir
	// -mod=mod lets the go command complete go.mod from the module graph;
	// GOPROXY=off keeps it from the network.
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the README's program: %v\n%s\n--- main.go:\n%s", err, out, program)
	}
	run := exec.CommandContext(ctx, bin)
	run.Dir = dir
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("running the README's program: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got := stdout.String(); got != want {
		t.Errorf("the README's program printed %q, the README says %q\nstderr:\n%s", got, want, stderr.String())
	}
}
