// Package wasmtest builds the WebAssembly guests of testdata/wasm for tests:
// GOOS=wasip1 GOARCH=wasm go build, once per guest and test binary.
package wasmtest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// CacheEnv names the environment variable that places the tests'
// compilation cache (NewCache): a directory, or "off" for one in memory.
const CacheEnv = "XMLPIPE_WASM_TEST_CACHE"

// NewCache returns a compilation cache for a test binary's guests, on disk
// so that what one test run compiled the next one finds: compiling a Go
// guest takes a minute under the race detector on a loaded machine, and the
// guests only change when their sources do (wazero keys an entry by the
// module's bytes and its own version; a stale one is never used). The
// directory is $XMLPIPE_WASM_TEST_CACHE, else xmlpipe/wasm-test in the
// user's cache directory; "off", or a directory that cannot be made, gives
// an in-memory cache for this binary alone. Entries written more than
// CacheMaxAge ago are removed first (compiled again when still needed), so
// the guests of old sources do not pile up.
func NewCache() wazero.CompilationCache {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "xmlpipe", "wasm-test")
		}
	}
	if dir != "" && dir != "off" {
		prune(dir, time.Now().Add(-CacheMaxAge))
		if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
}

// CacheMaxAge is how long NewCache keeps a compiled guest.
const CacheMaxAge = 14 * 24 * time.Hour

// prune removes the regular files under dir written before cutoff, and the
// directories that leaves empty (those of older wazero versions). Errors
// are ignored: the cache works without pruning.
func prune(dir string, cutoff time.Time) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().Before(cutoff) {
			_ = os.Remove(p)
		}
		return nil
	})
	if subs, err := os.ReadDir(dir); err == nil {
		for _, s := range subs {
			if s.IsDir() {
				_ = os.Remove(filepath.Join(dir, s.Name())) // only if empty
			}
		}
	}
}

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
	// -trimpath: the same sources give the same bytes in any checkout, so
	// NewCache's entries serve every worktree.
	args := []string{"build", "-trimpath", "-o", path}
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
