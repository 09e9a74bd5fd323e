package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRequestValidate(t *testing.T) {
	call := func(id string) ToolCall {
		return ToolCall{ID: id, Name: "calculate", Arguments: json.RawMessage(`{}`)}
	}
	user := Message{Role: User, Content: "go"}
	asks := func(ids ...string) Message {
		m := Message{Role: Assistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, call(id))
		}
		return m
	}
	result := func(id string) Message { return Message{Role: Tool, ToolCallID: id, Content: "ok"} }
	tests := []struct {
		name string
		edit func(r *Request)
		want string // "" : valid
	}{
		{"a whole tool round", func(r *Request) {
			r.Messages = []Message{user, asks("a", "b"), result("b"), result("a"), {Role: Assistant, Content: "done"}, user}
		}, ""},
		{"structured output with tools", func(r *Request) {
			r.Output = &OutputSchema{Schema: json.RawMessage(`{"type":"object"}`)}
			r.ToolChoice = UseTool("weather_forecast")
		}, ""},
		{"tool name with a dot", func(r *Request) { r.Tools = []ToolSpec{{Name: "weather.forecast"}} },
			`tools[0]: name "weather.forecast" must match`},
		{"tool name too long", func(r *Request) { r.Tools = []ToolSpec{{Name: strings.Repeat("a", 65)}} }, "must match"},
		{"tool offered twice", func(r *Request) { r.Tools = append(r.Tools, ToolSpec{Name: "calculate"}) },
			`tools[2]: name "calculate" is offered twice`},
		{"parameters not an object", func(r *Request) { r.Tools[0].Parameters = json.RawMessage(`[]`) },
			"tools[0] (calculate): parameters must be a JSON Schema object"},
		{"named choice not offered", func(r *Request) { r.ToolChoice = UseTool("launch") }, `tool choice names "launch"`},
		{"required without tools", func(r *Request) { r.Tools, r.ToolChoice = nil, ToolChoice{Mode: ToolRequired} },
			"tool choice required without tools"},
		{"unknown choice", func(r *Request) { r.ToolChoice = ToolChoice{Mode: "any"} }, `unknown tool choice mode "any"`},
		{"output clashes with a tool", func(r *Request) {
			r.Output = &OutputSchema{Name: "calculate", Schema: json.RawMessage(`{}`)}
		}, `output schema name "calculate" is also a tool's name`},
		{"output schema missing", func(r *Request) { r.Output = &OutputSchema{} }, "output schema must be a JSON Schema object"},
		{"result for no call", func(r *Request) { r.Messages = []Message{user, result("x")} },
			`messages[1]: tool result for "x", which no earlier assistant message called`},
		{"second result", func(r *Request) { r.Messages = []Message{user, asks("a"), result("a"), result("a")} },
			`messages[3]: a second result for tool call "a"`},
		{"call left unanswered", func(r *Request) { r.Messages = []Message{user, asks("a", "b"), result("a"), user} },
			`messages[3]: tool call "b" has no result`},
		{"unanswered at the end", func(r *Request) { r.Messages = []Message{user, asks("a")} }, `the conversation ends with tool call "a" unanswered`},
		{"call without id", func(r *Request) { r.Messages = []Message{user, asks("")} }, "messages[1].tool_calls[0]: no id"},
		{"id used twice", func(r *Request) { r.Messages = []Message{user, asks("a"), result("a"), asks("a")} },
			`messages[3].tool_calls[0]: id "a" used twice`},
		{"unknown role", func(r *Request) { r.Messages = []Message{{Role: "developer", Content: "x"}} }, `unknown role "developer"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Request{Messages: []Message{user}, Tools: append([]ToolSpec(nil), testTools...)}
			tc.edit(&r)
			err := r.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestReplyMessageContinuesTheConversation(t *testing.T) {
	rep := Reply{Content: "Let me look.", ToolCalls: []ToolCall{{ID: "c1", Name: "calculate", Arguments: json.RawMessage(`{}`)}}}
	m := rep.Message()
	if m.Role != Assistant || m.Content != rep.Content || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "c1" {
		t.Errorf("message %+v", m)
	}
}

func TestMintedIDsAreStable(t *testing.T) {
	a := finishCalls([]ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {Name: "f", Arguments: json.RawMessage(`{"x":1}`)},
		{ID: "keep", Name: "g"}, {ID: "keep", Name: "g"}})
	b := finishCalls([]ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {Name: "f", Arguments: json.RawMessage(`{"x":1}`)},
		{ID: "keep", Name: "g"}, {ID: "keep", Name: "g"}})
	if a[0].ID == a[1].ID || a[2].ID != "keep" || a[3].ID == "keep" {
		t.Errorf("ids %q %q %q %q", a[0].ID, a[1].ID, a[2].ID, a[3].ID)
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Errorf("call %d: id %q then %q", i, a[i].ID, b[i].ID)
		}
	}
}

// TestCallBuilderCountsNamelessCalls: a streamed call that never got a
// function name is left out of the calls and counted.
func TestCallBuilderCountsNamelessCalls(t *testing.T) {
	var b callBuilder
	b.piece(0, true, "call_1", "", `{"Expression":"1"}`, nil)
	b.piece(1, true, "call_2", "calc", `{}`, nil)
	calls, nameless := b.done()
	if len(calls) != 1 || calls[0].Name != "calc" || nameless != 1 {
		t.Fatalf("calls %+v, nameless %d; want only calc and 1", calls, nameless)
	}
}
