package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// export is one exported function of a module exporting assembles: its
// name and type (value type bytes: 0x7f i32, 0x7e i64).
type export struct {
	name            string
	params, results []byte
}

// exporting assembles a module of one function per export, each of its own
// type, its body returning zeros.
func exporting(exports ...export) []byte {
	count := func() []byte { return uleb(uint64(len(exports))) }
	types, funcs, names, code := count(), count(), count(), count()
	for i, e := range exports {
		types = append(append(types, 0x60), uleb(uint64(len(e.params)))...)
		types = append(append(types, e.params...), uleb(uint64(len(e.results)))...)
		types = append(types, e.results...)
		funcs = append(funcs, uleb(uint64(i))...)
		names = append(append(append(names, uleb(uint64(len(e.name)))...), e.name...), 0)
		names = append(names, uleb(uint64(i))...)
		body := []byte{0} // no locals
		for _, r := range e.results {
			body = append(body, 0x41+0x7f-r, 0) // i32.const 0 (0x41) or i64.const 0 (0x42)
		}
		body = append(body, 0x0b)
		code = append(append(code, uleb(uint64(len(body)))...), body...)
	}
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	for _, s := range []struct {
		id   byte
		body []byte
	}{{1, types}, {3, funcs}, {7, names}, {10, code}} {
		m = append(m, section(s.id, s.body)...)
	}
	return m
}

// TestABIErrorsSayWhatCameAndWhatIsWanted: a module that is neither a
// reactor nor a command is told what it exports, and an export of the
// wrong type its type and the one wanted — not "exports neither handle"
// of a module that exports handle.
func TestABIErrorsSayWhatCameAndWhatIsWanted(t *testing.T) {
	i32, i64 := []byte{0x7f}, []byte{0x7e}
	tests := []struct {
		name    string
		module  []byte
		want    []string
		notWant []string
	}{
		{"other exports", exporting(export{"run", nil, i32}, export{"_initialize", nil, nil}),
			[]string{"it exports _initialize, run", "//go:wasmexport handle"}, nil},
		{"no export", exporting(),
			[]string{"it exports no function"}, nil},
		{"handle of the wrong type", exporting(export{"handle", i32, i64}),
			[]string{"handle is (i32) -> i64", "want () -> i32"}, []string{"exports neither"}},
		{"handle without a result", exporting(export{"handle", nil, nil}),
			[]string{"handle is () -> ()", "want () -> i32"}, []string{"exports neither"}},
		{"_start of the wrong type", exporting(export{"_start", nil, i32}),
			[]string{"_start is () -> i32", "want () -> ()"}, []string{"exports neither"}},
		{"describe of the wrong type", exporting(export{"handle", nil, i32}, export{"describe", i32, i32}),
			[]string{"describe is (i32) -> i32", "want () -> i32"}, []string{"exports neither"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(context.Background(), "abi", tc.module, Sandbox{}, nil, nil)
			if !errors.Is(err, ErrABI) {
				t.Fatalf("err = %v, want ErrABI", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q says %q", err, w)
				}
			}
		})
	}
	// The modules are well formed: a right one of the same make compiles.
	m, err := Compile(context.Background(), "abi", exporting(export{"handle", nil, i32}, export{"describe", nil, i32}),
		Sandbox{}, nil, nil)
	if err != nil {
		t.Fatalf("a reactor: %v", err)
	}
	_ = m.Close(context.Background())
}
