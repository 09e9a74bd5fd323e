package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// wantPythonAdvice is what an unknown Python payload_class or handler is told
// to do instead: xmlpipe cannot import a Python module.
const wantPythonAdvice = "xmlpipe runs no Python: write the listener in Go and register it in the catalog " +
	"(README \"Writing a listener\"), or run it as a WebAssembly module (type: wasm) or an MCP server (type: mcp)"

// TestUnknownPythonNameSaysWhatToDo: the reference's docs/configuration.md
// names Python classes (examples.calculator.AddPayload,
// examples.calculator.add_handler) no catalog holds. Their error says what
// to do instead; a Go catalog name mistyped (one dot) is only told the
// known names, as before.
func TestUnknownPythonNameSaysWhatToDo(t *testing.T) {
	c := Builtin()
	pt, err := xmlpipe.NewPayloadType(reflect.TypeFor[hello.Greeting]())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kind string
		err        error
		advised    bool
	}{
		{"examples.calculator.AddPayload", "payload", ErrUnknownPayload, true},
		{"agents.researcher:ResearchPayload", "payload", ErrUnknownPayload, true},
		{"examples.calculator.add_handler", "handler", ErrUnknownHandler, true},
		{"gateways.bing:search_handler", "handler", ErrUnknownHandler, true},
		{"hello.Greetin", "payload", ErrUnknownPayload, false},
		{"hello.Greter", "handler", ErrUnknownHandler, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.kind == "payload" {
				_, err = c.PayloadType(tc.name)
			} else {
				_, err = c.Handler(tc.name, pt, Env{})
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if got := strings.HasSuffix(err.Error(), "; "+wantPythonAdvice); got != tc.advised {
				t.Errorf("advised = %v, want %v: %v", got, tc.advised, err)
			}
		})
	}
}
