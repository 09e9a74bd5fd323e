package organism

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"

	"go.uber.org/goleak"
)

// wasmGuests builds the test guests into guestsDir, made by the first
// guestPath and removed by TestMain: the crash tests' children run this
// binary too and are killed with SIGKILL, so a directory made up front by
// every process was left behind by each child. wasmCache keeps the guests
// compiled, between runs too (wasmtest.NewCache), for the organisms the
// tests make (Options.WasmCache).
var (
	guestsOnce sync.Once
	guestsDir  string
	guestsErr  error
	wasmGuests *wasmtest.Guests
	wasmCache  wazero.CompilationCache
)

func TestMain(m *testing.M) {
	wasmCache = wasmtest.NewCache()
	ignore := goleak.IgnoreCurrent()
	code := m.Run()
	_ = wasmCache.Close(context.Background())
	if guestsDir != "" {
		_ = os.RemoveAll(guestsDir)
	}
	if code == 0 {
		// A goroutine a test started and left running fails the package.
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// guestPath builds a reactor guest (once per test binary).
func guestPath(t *testing.T, name string) string {
	t.Helper()
	guestsOnce.Do(func() {
		guestsDir, guestsErr = os.MkdirTemp("", "xmlpipe-organism-wasm-")
		wasmGuests = wasmtest.New(guestsDir)
	})
	if guestsErr != nil {
		t.Fatal(guestsErr)
	}
	return wasmGuests.Build(t, name, true)
}

// collector is an outlet that hands events to the test.
type collector chan pump.Event

func (c collector) Deliver(e pump.Event) {
	select {
	case c <- e:
	default:
	}
}

// await returns the first event of a kind in want, failing on timeout.
func (c collector) await(t *testing.T, want ...pump.EventKind) pump.Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e := <-c:
			for _, k := range want {
				if e.Kind == k {
					return e
				}
			}
		case <-timeout:
			t.Fatalf("no %v event", want)
		}
	}
}

func TestWasmListenersThroughThePump(t *testing.T) {
	calc, loop := guestPath(t, "calc"), guestPath(t, "loop")
	dir := t.TempDir()
	yaml := fmt.Sprintf(`organism: {name: wasm-test}
listeners:
  - name: calc
    type: wasm
    module: %s
    description: A calculator in WebAssembly (its contract comes from its describe export)
  - name: calc2
    type: wasm
    module: %s
    description: The same calculator with its contract written here
    payload:
      root: Calc2
      fields:
        - {name: A, type: double}
        - {name: B, type: double}
        - {name: Op, type: string, enum: [add, sub, mul, div]}
    response:
      root: Other
      fields: [{name: Value, type: double}]
  - name: spin
    type: wasm
    module: %s
    description: Never answers
    payload: {root: Spin, fields: [{name: N, type: integer, optional: true}]}
    capabilities: {timeout: 300ms, memory_mb: 64}
`, calc, calc, loop)
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{WasmCache: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	send := func(to, body string) collector {
		t.Helper()
		c := make(collector, 64)
		env := stage.AppendEnvelope(nil, "tester", to, stage.NewThreadID(), []byte(body))
		if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
			t.Fatalf("inject to %s: %v", to, err)
		}
		return c
	}
	answer := func(to, body string) pump.Event {
		t.Helper()
		return send(to, body).await(t, pump.EventReply, pump.EventHuh, pump.EventDeadLetter)
	}

	e := answer("calc", `<Calc xmlns=""><A>2</A><B>40</B><Op>add</Op></Calc>`)
	if e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<CalcResult") ||
		!strings.Contains(string(e.Envelope), "<Value>42</Value>") {
		t.Fatalf("calc: %s %s %s", e.Kind, e.Error, e.Envelope)
	}
	// A guest failure (division by zero) is a <huh> to the sender.
	if e := answer("calc", `<Calc xmlns=""><A>1</A><B>0</B><Op>div</Op></Calc>`); e.Kind != pump.EventHuh {
		t.Fatalf("division by zero: %s %s", e.Kind, e.Envelope)
	}
	// Output that is not the declared response is a <huh> too.
	if e := answer("calc2", `<Calc2 xmlns=""><A>1</A><B>2</B><Op>add</Op></Calc2>`); e.Kind != pump.EventHuh {
		t.Fatalf("wrong response: %s %s", e.Kind, e.Envelope)
	}
	// A runaway guest is interrupted; the sender gets a <huh>.
	start := time.Now()
	if e := answer("spin", `<Spin xmlns=""/>`); e.Kind != pump.EventHuh {
		t.Fatalf("spin: %s %s", e.Kind, e.Envelope)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("spin took %s", d)
	}
	// The organism stays up: the calculator still answers.
	if e := answer("calc", `<Calc xmlns=""><A>6</A><B>7</B><Op>mul</Op></Calc>`); e.Kind != pump.EventReply ||
		!strings.Contains(string(e.Envelope), "<Value>42</Value>") {
		t.Fatalf("calc after failures: %s %s", e.Kind, e.Envelope)
	}
}

func TestOverlaps(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	for _, d := range []string{filepath.Join(data, "keys"), filepath.Join(base, "data-wasm"), filepath.Join(base, "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"to-data": "data", "to-keys": "data/keys", "to-base": ".", "to-other": "other"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		dir  string
		want bool
	}{
		{"data", true},
		{"data/keys", true},
		{"data/not-yet/made", true},
		{".", true},
		{"to-data", true},
		{"to-keys", true},
		{"to-base", true},
		{"to-data/../other", false}, // cleaned first (as the configuration is): base/other
		{"data-wasm", false},        // a sibling whose name starts with "data"
		{"other", false},
		{"to-other", false},
		{"missing", false},
	}
	for _, tc := range tests {
		if got := overlaps(filepath.Join(base, tc.dir), data); got != tc.want {
			t.Errorf("overlaps(%s, data) = %v, want %v", tc.dir, !tc.want, tc.want)
		}
	}
}

// TestWasmDirOverlappingDataDirRefused: a wasm listener never sees the
// organism's data directory (its keys, journal, certificates): a
// capabilities.dir equal to it, inside it or containing it is refused at
// load — with its position in organism.yaml — also through a symbolic
// link, also for the data directory given with --data (Options.DataDir),
// and for a listener added while the organism runs.
func TestWasmDirOverlappingDataDirRefused(t *testing.T) {
	calc := guestPath(t, "calc")
	load := func(t *testing.T, dir, capDir string, opts Options) error {
		t.Helper()
		yaml := fmt.Sprintf("organism: {name: guarded}\nlisteners:\n  - name: calc\n    type: wasm\n    module: %s\n"+
			"    description: a calculator\n    capabilities: {dir: %q}\n", calc, capDir)
		path := filepath.Join(dir, "organism.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := Load(path, opts)
		if err == nil {
			_ = o.Shutdown(context.Background())
		}
		return err
	}
	t.Run("configured", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "data", "keys"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("data", filepath.Join(dir, "wasm-link")); err != nil {
			t.Fatal(err)
		}
		for _, capDir := range []string{"data", "data/keys", ".", "wasm-link"} {
			err := load(t, dir, capDir, Options{})
			if err == nil || !strings.Contains(err.Error(), "organism.yaml:7") || !strings.Contains(err.Error(), "overlaps") {
				t.Errorf("dir %s: err = %v, want an overlap at organism.yaml:7", capDir, err)
			} else {
				t.Logf("dir %s: %v", capDir, err)
			}
		}
	})
	t.Run("--data", func(t *testing.T) {
		dir, data := t.TempDir(), t.TempDir()
		err := load(t, dir, filepath.Join(data, "guest"), Options{DataDir: data})
		if !errors.Is(err, ErrDataDirOverlap) || !strings.Contains(err.Error(), "organism.yaml:7") {
			t.Fatalf("err = %v, want ErrDataDirOverlap at organism.yaml:7", err)
		}
		t.Log(err)
	})
	t.Run("added while running", func(t *testing.T) {
		o, dir := liveOrganism(t)
		copyFile(t, calc, filepath.Join(dir, "calc.wasm"))
		if err := os.MkdirAll(filepath.Join(dir, "data", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, capDir := range []string{"data", "data/sub", "."} {
			err := o.AddListener(config.Listener{Name: "calc", Type: config.WasmListener, Module: "calc.wasm",
				Description: "refused", Capabilities: config.Capabilities{Dir: capDir}})
			if !errors.Is(err, ErrDataDirOverlap) {
				t.Errorf("dir %s: err = %v, want ErrDataDirOverlap", capDir, err)
			}
			if _, ok := o.Pump.Lookup("calc"); ok {
				t.Fatalf("dir %s: registered anyway", capDir)
			}
		}
	})
}
