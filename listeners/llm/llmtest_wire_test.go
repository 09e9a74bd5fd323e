package llm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
)

// llmtestBackend is an openai backend on the loopback ChatModel.
func llmtestBackend(t *testing.T, m *llmtest.ChatModel) *Backend {
	t.Helper()
	b, err := NewBackend(config.Backend{Provider: config.OpenAI, Name: "loop", BaseURL: m.URL, Priority: 1,
		RateLimitTPM: 100000, MaxConcurrent: 4, Timeout: config.Duration(time.Minute)}, "sk-test", m.Client())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChatModelSpeaksOpenAI: the loopback model other packages' tests use
// answers with text before two parallel tool calls the way OpenAI streams
// them (platform.openai.com/docs/guides/function-calling, "Streaming":
// each call announced by index, id and name, its arguments following in
// pieces keyed by the index alone), or whole, and the openai provider reads
// both to the same reply.
func TestChatModelSpeaksOpenAI(t *testing.T) {
	want := Reply{Content: "Let me look.", FinishReason: FinishToolCalls, StopReason: "tool_calls", Model: "test-model",
		Backend: "loop", Usage: Usage{PromptTokens: 11, CompletionTokens: 7, Requests: 1},
		ToolCalls: []ToolCall{
			{ID: "call_1", Name: "calculate", Arguments: json.RawMessage(`{"expression":"6*7 – «six fois sept»"}`)},
			{ID: "call_2", Name: "weather_forecast", Arguments: json.RawMessage(`{"city":"Paris","days":2}`)},
		}}
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[streamed], func(t *testing.T) {
			m := llmtest.NewChatModel(t, func(int) []string {
				return []string{"Let me ", "look.", llmtest.ToolCall("call_1", "calculate", `{"expression":"6*7 – «six fois sept»"}`),
					llmtest.ToolCall("call_2", "weather_forecast", `{"city":"Paris","days":2}`)}
			})
			req := Request{Messages: testMessages, Tools: testTools}
			pieces := map[int]int{} // call index → argument pieces
			if streamed {
				req.OnDelta = func(d Delta) {
					if d.ToolCall != nil && d.ToolCall.Arguments != "" {
						pieces[d.ToolCall.Index]++
					}
				}
			}
			got, err := llmtestBackend(t, m).do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, replyCmp); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if streamed && (pieces[0] < 2 || pieces[1] < 2) {
				t.Errorf("argument pieces per call %v, want the arguments in several pieces", pieces)
			}
		})
	}
}

// TestChatModelRecordsTheConversation: the next request carries the
// previous turns in OpenAI's shape — the assistant message with its
// tool_calls, then one tool message per call bound by tool_call_id, a
// failed one reading as an error — and the loopback model records them.
func TestChatModelRecordsTheConversation(t *testing.T) {
	m := llmtest.NewChatModel(t, func(int) []string { return []string{"ok"} })
	conv := toolConversation()
	if _, err := llmtestBackend(t, m).do(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) llmtest.Call {
		var c llmtest.Call
		c.ID, c.Function.Name, c.Function.Arguments = id, name, args
		return c
	}
	want := []llmtest.Message{
		{Role: "system", Content: "constitution"},
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "What is 6*7, and the weather in Paris?"},
		{Role: "assistant", Content: "Let me look.", ToolCalls: []llmtest.Call{
			call("call_1", "calculate", `{"expression":"6*7"}`), call("call_2", "weather_forecast", `{"city":"Paris","days":2}`)}},
		{Role: "tool", ToolCallID: "call_1", Content: "42"},
		{Role: "tool", ToolCallID: "call_2", Content: "Error: service unavailable"},
		{Role: "user", Content: "Try the weather again."},
	}
	if diff := cmp.Diff(want, m.Request(t, 0)); diff != "" {
		t.Errorf("recorded request (-want +got):\n%s", diff)
	}
}
