package console

import (
	"strings"
	"testing"
)

// TestStatusSaysHalted: /status after /halt says the organism is halted,
// with its scope and what /resume does; after /resume it says nothing of it.
func TestStatusSaysHalted(t *testing.T) {
	b := helloWorld(t)
	const halted = "Halted (all): queued messages wait; /resume lifts the halt."
	tests := []struct {
		name, input string
		want        bool
	}{
		{"running", "/status\n", false},
		{"halted", "/halt all\n/status\n", true},
		{"resumed", "/resume\n/status\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := session(t, b, Config{}, tt.input)
			_, status, ok := strings.Cut(out, "Organism: hello-world\n")
			if !ok {
				t.Fatalf("no status:\n%s", out)
			}
			if got := strings.Contains(status, halted); got != tt.want {
				t.Errorf("status says %q: %v, want %v:\n%s", halted, got, tt.want, out)
			}
		})
	}
}
