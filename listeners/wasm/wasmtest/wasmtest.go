// Package wasmtest builds the WebAssembly guests of testdata/wasm for tests:
// GOOS=wasip1 GOARCH=wasm go build, once per guest and test binary.
package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Guests builds guests into one directory (a test binary's temporary
// directory, made in its TestMain) and remembers what it built.
type Guests struct {
	dir   string
	mu    sync.Mutex
	built map[string]string
}

// New returns a builder writing into dir.
func New(dir string) *Guests { return &Guests{dir: dir, built: map[string]string{}} }

// sourceDir is testdata/wasm of this module.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "wasm")
}

// Build builds testdata/wasm/<name> — as a reactor (go build
// -buildmode=c-shared, pooled instances) when reactor is true, else as a WASI
// command — and returns the .wasm path.
func (g *Guests) Build(tb testing.TB, name string, reactor bool) string {
	tb.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	key := name + ".command"
	if reactor {
		key = name + ".reactor"
	}
	if path, ok := g.built[key]; ok {
		return path
	}
	path := filepath.Join(g.dir, key+".wasm")
	args := []string{"build", "-o", path}
	if reactor {
		args = append(args, "-buildmode=c-shared")
	}
	cmd := exec.Command("go", append(args, "./"+name)...)
	cmd.Dir = sourceDir()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build guest %s: %v\n%s", key, err, out)
	}
	g.built[key] = path
	return path
}
