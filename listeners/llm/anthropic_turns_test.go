package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestAnthropicTurns: the Messages API refuses a request whose messages
// (but an optional final assistant one) have empty content ("messages.N:
// all messages must have non-empty content except for the optional final
// assistant message", invalid_request_error), or whose text blocks hold
// only white space; it combines consecutive same-role turns itself
// (docs.anthropic.com/en/api/messages, messages). So an empty turn is left
// out, and what then stands side by side with one role is sent as one
// turn, in order.
func TestAnthropicTurns(t *testing.T) {
	call := []ToolCall{{ID: "toolu_1", Name: "calculate", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}
	tests := []struct {
		name string
		msgs []Message
		want string // the request's messages
	}{
		{"an empty answer between two user turns",
			[]Message{{Role: User, Content: "hi"}, {Role: Assistant, Content: ""}, {Role: User, Content: "still there?"}},
			`[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"still there?"}]}]`},
		{"white space alone is empty",
			[]Message{{Role: User, Content: "hi"}, {Role: Assistant, Content: " \n"}, {Role: User, Content: "\t"},
				{Role: User, Content: "go on"}},
			`[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"go on"}]}]`},
		{"white space beside tool calls",
			[]Message{{Role: User, Content: "6*7?"}, {Role: Assistant, Content: "  ", ToolCalls: call},
				{Role: Tool, ToolCallID: "toolu_1", Content: "42"}},
			`[{"role":"user","content":"6*7?"},
			  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"calculate","input":{"expression":"6*7"}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"42"}]}]`},
		{"two answers in a row",
			[]Message{{Role: User, Content: "6*7?"}, {Role: Assistant, Content: "Let me see."},
				{Role: Assistant, ToolCalls: call}, {Role: Tool, ToolCallID: "toolu_1", Content: "42"}},
			`[{"role":"user","content":"6*7?"},
			  {"role":"assistant","content":[{"type":"text","text":"Let me see."},
			    {"type":"tool_use","id":"toolu_1","name":"calculate","input":{"expression":"6*7"}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"42"}]}]`},
		{"a final empty assistant turn stays out too",
			[]Message{{Role: User, Content: "hi"}, {Role: Assistant, Content: ""}},
			`[{"role":"user","content":"hi"}]`},
		{"alternating turns are as they were",
			[]Message{{Role: User, Content: "hi"}, {Role: Assistant, Content: "hello"}, {Role: User, Content: "bye"}},
			`[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"bye"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, okReply(config.Anthropic, "ok"))
			msgs := append([]Message{{Role: System, Content: "constitution"}}, tc.msgs...)
			if _, err := backendFor(t, config.Anthropic, "b", f).do(context.Background(), Request{Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, f.requests()[0].Body["messages"]); diff != "" {
				t.Errorf("messages (-want +sent):\n%s", diff)
			}
		})
	}
}
