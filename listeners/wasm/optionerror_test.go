package wasm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Open tells which option an error is about (the caller places it at that
// key of its configuration) and leaves naming the listener to the caller.
func TestOpenOptionErrorKey(t *testing.T) {
	ctx := context.Background()
	calc := guests.Build(t, "calc", false)
	missing := func(name string) string { return filepath.Join(t.TempDir(), name) }
	tests := []struct {
		name string
		o    Options
		key  string
	}{
		{"missing module", Options{Name: "w", Module: missing("nope.wasm")}, "module"},
		{"missing dir", Options{Name: "w", Module: calc, Sandbox: Sandbox{Dir: missing("nope")}, Cache: testCache},
			"capabilities.dir"},
		{"missing xsd", Options{Name: "w", Module: calc, XSD: missing("nope.xsd"), Cache: testCache}, "xsd"},
		{"malformed payload", Options{Name: "w", Module: calc, Payload: Fields{Root: "1st"}, Cache: testCache}, "payload"},
		{"malformed response", Options{Name: "w", Module: calc, Payload: Fields{Root: "Calc", Fields: []Field{{Name: "A"}}},
			Response: Fields{Root: "1st"}, Cache: testCache}, "response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Open(ctx, tt.o)
			if err == nil {
				_ = l.Close(ctx)
				t.Fatal("Open succeeded")
			}
			oe, ok := errors.AsType[*OptionError](err)
			if !ok || oe.Key != tt.key {
				t.Fatalf("Open = %v, want an *OptionError about %s", err, tt.key)
			}
			if !strings.HasPrefix(err.Error(), tt.key+": ") || strings.Contains(err.Error(), "listener w") {
				t.Errorf("Open = %q, want it to begin %q and not name the listener", err, tt.key+": ")
			}
			// The key is said once: "capabilities.dir: open …", not
			// "capabilities.dir: dir: open …".
			last := tt.key[strings.LastIndex(tt.key, ".")+1:]
			if rest := strings.TrimPrefix(err.Error(), tt.key+": "); strings.HasPrefix(rest, last+": ") {
				t.Errorf("Open = %q, names its option twice", err)
			}
		})
	}
}
