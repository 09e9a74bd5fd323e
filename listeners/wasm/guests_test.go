package wasm

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"

	"go.uber.org/goleak"
)

// The guests are built once per test binary (into one temporary directory)
// and compiled once (into a compilation cache on disk, kept between runs:
// see wasmtest.NewCache).
var (
	guests    *wasmtest.Guests
	testCache wazero.CompilationCache
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xmlpipe-wasm-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guests = wasmtest.New(dir)
	testCache = wasmtest.NewCache()
	ignore := goleak.IgnoreCurrent()
	code := m.Run()
	_ = testCache.Close(context.Background())
	_ = os.RemoveAll(dir)
	removeFuzzTree()
	if code == 0 {
		// A goroutine a test started and left running fails the package.
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// guest builds testdata/wasm/<name> and returns the module bytes.
func guest(tb testing.TB, name string, kind Kind) []byte {
	tb.Helper()
	b, err := os.ReadFile(guests.Build(tb, name, kind == Reactor))
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
