package config

import (
	"strings"
	"testing"
)

func TestResolvePrompt(t *testing.T) {
	blocks := map[string]string{"who": "You are a poet.\n", "style": "Use haiku."}
	tests := []struct {
		name   string
		blocks map[string]string
		prompt string
		want   string
		err    string
	}{
		{"literal text", blocks, "You are a poet. Be brief.", "You are a poet. Be brief.", ""},
		{"one block", blocks, "who", "You are a poet.", ""},
		{"composed", blocks, "who & style", "You are a poet.\n\nUse haiku.", ""},
		{"composed, spaced", blocks, "  who&style ", "You are a poet.\n\nUse haiku.", ""},
		{"one word, not a block", blocks, "Greetings", "Greetings", ""},
		{"one word, no blocks", nil, "who", "who", ""},
		{"missing block", blocks, "who & tone", "", `prompt block "tone" does not exist (prompts: style, who)`},
		{"composed without blocks", nil, "a & b", "", `prompt block "a" does not exist (prompts: none defined)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &Organism{Prompts: tc.blocks}
			got, err := o.ResolvePrompt(tc.prompt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTemperatureUnset(t *testing.T) {
	if (Temperature{}).Ptr() != nil {
		t.Error("unset temperature has a value")
	}
	if p := (Temperature{Value: 0, Set: true}).Ptr(); p == nil || *p != 0 {
		t.Error("temperature 0 was lost")
	}
}
