package organism

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
)

// A wasm listener's configuration errors are told at the line of the key
// they concern — the module, its xsd, its payload_class — not the entry's,
// and name the listener once.
func TestWasmConfigErrorAtKeyLine(t *testing.T) {
	calc := guestPath(t, "calc")
	tests := []struct {
		name  string
		entry string // the keys after name (line 3) and type (line 4)
		want  string // the error's beginning, the file name left out
		is    error
	}{
		{"missing module", "    description: d\n    module: missing.wasm\n",
			`:6: listener w: module: open `, fs.ErrNotExist},
		{"missing xsd", "    description: d\n    module: " + calc + "\n    xsd: missing.xsd\n",
			`:7: listener w: xsd: open `, fs.ErrNotExist},
		{"unknown payload_class", "    description: d\n    module: " + calc + "\n    payload_class: nope.Thing\n",
			`:7: listener w: payload_class: unknown payload_class "nope.Thing"`, catalog.ErrUnknownPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "organism.yaml")
			doc := "organism: {name: wasm-keys}\nlisteners:\n  - name: w\n    type: wasm\n" + tt.entry
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, Options{WasmCache: wasmCache})
			if !errors.Is(err, tt.is) {
				t.Fatalf("Load = %v, want an error wrapping %v", err, tt.is)
			}
			if got := strings.TrimPrefix(err.Error(), path); !strings.HasPrefix(got, tt.want) {
				t.Errorf("Load = %v\nwant it to begin %s%s", err, path, tt.want)
			}
			if n := strings.Count(err.Error(), "listener w"); n != 1 {
				t.Errorf("Load = %v: names the listener %d times, want once", err, n)
			}
			if _, ok := errors.AsType[*wasm.OptionError](err); !ok {
				t.Errorf("Load = %v: no *wasm.OptionError in it", err)
			}
		})
	}
}
