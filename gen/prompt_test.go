package gen

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPromptSectionNotRegistered(t *testing.T) {
	if got, want := PromptSection(Peer{Name: "calculator", Description: "ignored"}), "## calculator (not registered)"; got != want {
		t.Errorf("PromptSection = %q, want %q", got, want)
	}
}

func TestUsageInstructionsShape(t *testing.T) {
	greeting, err := Describe(reflect.TypeFor[Greeting]())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		peers []Peer
		want  string
	}{
		{"no peers", nil, "You are the a agent.\nDescription: d\n\nYou can send messages to the following peers:\n" + responseSemantics},
		{"unknown peer", []Peer{{Name: "x"}}, "You are the a agent.\nDescription: d\n\nYou can send messages to the following peers:\n\n## x (not registered)\n" + responseSemantics},
		{"two peers", []Peer{{Name: "x"}, {Name: "g", Description: "gd", Type: greeting}},
			"You are the a agent.\nDescription: d\n\nYou can send messages to the following peers:\n\n## x (not registered)\n\n" +
				PromptSection(Peer{Name: "g", Description: "gd", Type: greeting}) + "\n" + responseSemantics},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UsageInstructions("a", "d", tt.peers)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("UsageInstructions (-want +got):\n%s", diff)
			}
			if !strings.HasSuffix(got, "wait for their response before you respond.") {
				t.Errorf("text must end with the response-semantics block")
			}
		})
	}
}

func TestPromptSectionUsesRealNames(t *testing.T) {
	ty, err := Describe(reflect.TypeFor[GreetingResponse]())
	if err != nil {
		t.Fatal(err)
	}
	got := PromptSection(Peer{Name: "shouter", Type: ty})
	for _, want := range []string{"<OriginalSender>", "<Message>"} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt section lacks %s (Q19: the example must use the schema's names)", want)
		}
	}
	if strings.Contains(got, "original_sender") {
		t.Errorf("prompt section uses snake_case names (Q19)")
	}
}
