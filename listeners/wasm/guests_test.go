package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
)

// The guests are built once per test binary (into one temporary directory)
// and compiled once per test binary (into one shared compilation cache).
var (
	guestDir   string
	guestMu    sync.Mutex
	guestBuilt = map[string]string{}
	testCache  = wazero.NewCompilationCache()
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xmlpipe-wasm-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guestDir = dir
	code := m.Run()
	_ = testCache.Close(context.Background())
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// guest builds testdata/wasm/<name> as a reactor (or a command) and returns
// the module bytes.
func guest(tb testing.TB, name string, kind Kind) []byte {
	tb.Helper()
	guestMu.Lock()
	defer guestMu.Unlock()
	key := name + "." + string(kind)
	path, ok := guestBuilt[key]
	if !ok {
		path = filepath.Join(guestDir, key+".wasm")
		args := []string{"build", "-o", path}
		if kind == Reactor {
			args = append(args, "-buildmode=c-shared")
		}
		args = append(args, "./"+name)
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join("..", "..", "testdata", "wasm")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("build guest %s: %v\n%s", key, err, out)
		}
		guestBuilt[key] = path
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// compileGuest builds and compiles a guest; the module is closed at the end
// of the test.
func compileGuest(tb testing.TB, name string, kind Kind, sb Sandbox) *Module {
	tb.Helper()
	m, err := Compile(context.Background(), name, guest(tb, name, kind), sb, testCache, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}
