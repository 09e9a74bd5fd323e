package console

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestListenerLineHostileDescription: a description written by someone
// else (a federated peer's import, an OOB registration) cannot recolour
// the terminal, move its cursor or forge a line of /listeners.
func TestListenerLineHostileDescription(t *testing.T) {
	tests := []struct {
		name, description, want string
	}{
		{"plain", "Greets people", "  greeter              Greets people  <Greeting>"},
		{"escape", "\x1b[31mred\x1b[0m", "  greeter              \uFFFD[31mred\uFFFD[0m  <Greeting>"},
		{"forged line", "ok\n  admin                Root shell  <Shell>", "  greeter              ok   admin                Root shell  <Shell>  <Greeting>"},
		{"carriage return", "harmless\rEVIL", "  greeter              harmless EVIL  <Greeting>"},
		{"bidi", "abc\u202Edcba", "  greeter              abc\uFFFDdcba  <Greeting>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listenerLine(organism.ListenerInfo{Name: "greeter", Description: tt.description, RootTag: "Greeting"})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}
