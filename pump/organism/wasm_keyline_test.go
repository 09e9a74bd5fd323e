package organism

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// junkModule has the WebAssembly magic and version, then bytes wazero
// cannot compile.
var junkModule = []byte("\x00asm\x01\x00\x00\x00garbage")

// namedW finds the listener w named in an error: "listener w:", "wasm w:".
var namedW = regexp.MustCompile(`\bw:`)

// A wasm listener's configuration errors are told at the line of the key
// they concern — the module, its xsd, its payload_class — not the entry's,
// and name the listener once.
func TestWasmConfigErrorAtKeyLine(t *testing.T) {
	calc := guestPath(t, "calc")
	tests := []struct {
		name  string
		entry string // the keys after name (line 3) and type (line 4)
		want  string // the error's beginning, the file name left out
		is    error  // nil: no sentinel to look for
	}{
		{"missing module", "    description: d\n    module: missing.wasm\n",
			`:6: listener w: module: open `, fs.ErrNotExist},
		{"missing xsd", "    description: d\n    module: " + calc + "\n    xsd: missing.xsd\n",
			`:7: listener w: xsd: open `, fs.ErrNotExist},
		{"unknown payload_class", "    description: d\n    module: " + calc + "\n    payload_class: nope.Thing\n",
			`:7: listener w: payload_class: unknown payload_class "nope.Thing"`, catalog.ErrUnknownPayload},
		// wazero refuses the bytes: told at the module's line, the
		// listener named once (not "listener w: wasm w: …").
		{"module wazero cannot compile", "    description: d\n    module: junk.wasm\n",
			`:6: listener w: module: `, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "junk.wasm"), junkModule, 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "organism.yaml")
			doc := "organism: {name: wasm-keys}\nlisteners:\n  - name: w\n    type: wasm\n" + tt.entry
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, Options{WasmCache: wasmCache})
			if err == nil || tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("Load = %v, want an error wrapping %v", err, tt.is)
			}
			if got := strings.TrimPrefix(err.Error(), path); !strings.HasPrefix(got, tt.want) {
				t.Errorf("Load = %v\nwant it to begin %s%s", err, path, tt.want)
			}
			if n := len(namedW.FindAllString(strings.TrimPrefix(err.Error(), path), -1)); n != 1 {
				t.Errorf("Load = %v: names the listener %d times, want once", err, n)
			}
			if _, ok := errors.AsType[*wasm.OptionError](err); !ok {
				t.Errorf("Load = %v: no *wasm.OptionError in it", err)
			}
		})
	}
}

// A wasm listener added while running whose module does not compile is
// refused with an error naming it once.
func TestWasmLiveAddCompileErrorNamesListenerOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "junk.wasm"), junkModule, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "organism.yaml")
	doc := "organism: {name: wasm-live}\nlisteners:\n  - name: greeter\n    payload_class: hello.Greeting\n" +
		"    handler: hello.Greeter\n    description: d\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{WasmCache: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	err = o.AddListener(config.Listener{Name: "w", Type: config.WasmListener, Description: "d", Module: "junk.wasm"})
	if err == nil {
		t.Fatal("AddListener accepted a module wazero cannot compile")
	}
	if n := len(namedW.FindAllString(err.Error(), -1)); n != 1 || !strings.Contains(err.Error(), "module: ") {
		t.Errorf("AddListener = %v: names the listener %d times, want once, and the module", err, n)
	}
}
