package wasm

import (
	"errors"
	"strings"
	"testing"
)

// TestDescribeErrorsNameTheKeys: a describe export writing YAML of the wrong
// shape is told, with the line, which key is unknown and which keys there
// are, or that it wrote no mapping — not "field typ not found in type
// fields.Field", which names Go types the guest's author never sees.
func TestDescribeErrorsNameTheKeys(t *testing.T) {
	tests := []struct {
		name, out string
		want      []string
		notWant   []string
	}{
		{"a field's key", "payload:\n  root: Calc\n  fields:\n    - {name: A, typ: double}\n",
			[]string{"line 4", `unknown key "typ"`, "name, type, doc, optional, repeated, enum"}, []string{"fields.Field"}},
		{"a list's key", "payload:\n  root: Calc\n  field: []\n",
			[]string{"line 3", `unknown key "field"`, "root, fields"}, []string{"fields.List"}},
		{"a top key", "payload:\n  root: Calc\nresponses:\n  root: R\n",
			[]string{"line 3", `unknown key "responses"`, "payload, response"}, []string{"wasm.Contract"}},
		{"no mapping", "hello",
			[]string{"line 1", `got a string "hello"`, "want a mapping of payload: (and response:)"}, []string{"wasm.Contract", "!!str"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseContract([]byte(tc.out))
			if !errors.Is(err, ErrContract) {
				t.Fatalf("err = %v, want ErrContract", err)
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
}
