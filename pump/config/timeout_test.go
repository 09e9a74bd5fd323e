package config

import (
	"strings"
	"testing"
	"time"
)

// TestListenerTimeout: a listener's timeout is a number of seconds or a Go
// duration; 0 or unset means the default; a negative one or a word is
// refused with file:line.
func TestListenerTimeout(t *testing.T) {
	base := `organism: {name: t}
listeners:
  - name: a
    payload_class: p
    handler: h
    description: d
`
	tests := []struct {
		line string
		want time.Duration
		err  string
	}{
		{"", 0, ""},
		{"    timeout: 0", 0, ""},
		{"    timeout: 90", 90 * time.Second, ""},
		{"    timeout: 2m", 2 * time.Minute, ""},
		{"    timeout: 1.5", 1500 * time.Millisecond, ""},
		{"    timeout: -1s", 0, "t.yaml:7: listeners[0].timeout: must not be negative, got -1s (0 or unset: the default)"},
		{"    timeout: none", 0, "t.yaml:7: listeners[0].timeout: want a duration"},
	}
	for _, tc := range tests {
		o, err := Parse("t.yaml", []byte(base+tc.line+"\n"))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if got := o.Listeners[0].Timeout.D(); got != tc.want {
			t.Errorf("%q: timeout %s, want %s", tc.line, got, tc.want)
		}
	}
}
