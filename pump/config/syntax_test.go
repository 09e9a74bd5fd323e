package config

import (
	"testing"
)

// TestSyntaxErrorLines checks that YAML syntax errors cite the right line,
// including those yaml.v3 reports without one or off by one.
func TestSyntaxErrorLines(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"first line, no line from yaml.v3", "a: b: c\n", "o.yaml:1: invalid YAML: mapping values are not allowed in this context"},
		{"scanner error", "x: 1\na: b: c\n", "o.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"parser error reported 0-based", "x: 1\ny: 'a'b\n", "o.yaml:2: invalid YAML: did not find expected key"},
		{"parser error deep in a block mapping", "x: 1\ntop:\n  a: 1\n  b: 2\n  c: 'x'y\n  d: 4\n", "o.yaml:5: invalid YAML: did not find expected key"},
		{"parser error deep in a block sequence", "x: 1\nlisteners:\n  - name: a\n    handler: h\n\n  - name: b\n    handler: h\n   description: d\n  - name: c\n", "o.yaml:8: invalid YAML: did not find expected '-' indicator"},
		{"parser error on the last line, no newline", "x: 1\ntop:\n  a: 1\n  c: 'x'y", "o.yaml:4: invalid YAML: did not find expected key"},
		{"unclosed flow", "x: 1\ny: [1\nz: 2\n", "o.yaml:2: invalid YAML: did not find expected ',' or ']'"},
		{"unterminated quote", "x: 1\ny: \"abc\n", "o.yaml:2: invalid YAML: found unexpected end of stream"},
		{"control character", "a: 1\n\x01\n", "o.yaml:2: invalid YAML: control characters are not allowed"},
		{"bad UTF-8", "a: 1\nb: \xff\n", "o.yaml:2: invalid YAML: invalid leading UTF-8 octet"},
		{"unknown anchor", "a: 1\nb:\n  - *zz\n", "o.yaml:3: invalid YAML: unknown anchor 'zz' referenced"},
		{"tab indentation", "organism:\n\tname: x\n", "o.yaml:2: invalid YAML: found character that cannot start any token (the line is indented with a tab: YAML indents with spaces)"},
		{"tab after spaces", "organism:\n  name: x\nlisteners:\n  \t- name: a\n", "o.yaml:4: invalid YAML: found character that cannot start any token (the line is indented with a tab: YAML indents with spaces)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("o.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error = %q\nwant      %q", got, tt.want)
			}
		})
	}
}
