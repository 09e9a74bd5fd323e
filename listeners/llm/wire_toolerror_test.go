package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResultText: openai/xai and ollama have no is_error on a tool message
// (Chat Completions' tool message is role, content, tool_call_id; Ollama's
// is role, content, tool_name), so a failed call's result says so in its
// words, once; anthropic keeps the words and sets is_error.
func TestResultText(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"success", Message{Role: Tool, Content: "42"}, "42"},
		{"failure", Message{Role: Tool, Content: "service unavailable", IsError: true}, "Error: service unavailable"},
		{"failure already saying so", Message{Role: Tool, Content: "error: division by zero", IsError: true},
			"error: division by zero"},
		{"failure without words", Message{Role: Tool, IsError: true}, "Error: the call failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resultText(tc.m)); diff != "" {
				t.Errorf("resultText (-want +got):\n%s", diff)
			}
		})
	}
}
