package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// geminiSignature is a tool call's extra_content as Gemini's
// OpenAI-compatible API gives it.
const geminiSignature = `{"google":{"thought_signature":"CiQBcsjafAbC0dEf1gH2iJ3kL4mN5oP6qR7sT8uV9wX0yZ=="}}`

// TestCompatCallExtraContent: Gemini's OpenAI-compatible chat completions
// give each tool call of a thinking model an extra_content holding its
// thought signature — in a stream with no index, the call whole in one
// delta, and finish_reason "stop" — and Gemini 3 refuses (4xx) the next
// request unless the signature comes back on the call (ai.google.dev/
// gemini-api/docs/thought-signatures; …/docs/openai, "Thought
// signatures"). The call keeps it and goes back with it.
func TestCompatCallExtraContent(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"extra_content\":" + geminiSignature +
		",\"function\":{\"arguments\":\"{\\\"city\\\":\\\"Paris\\\",\\\"days\\\":2}\",\"name\":\"weather_forecast\"},\"id\":\"function-call-1\",\"type\":\"function\"}]}," +
		"\"index\":0}],\"model\":\"gemini-3-flash-preview\",\"object\":\"chat.completion.chunk\"}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"finish_reason\":\"stop\",\"index\":0}],\"model\":\"gemini-3-flash-preview\"," +
		"\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":20,\"prompt_tokens\":80,\"total_tokens\":100}}\n\ndata: [DONE]\n\n"
	whole := `{"choices":[{"finish_reason":"tool_calls","index":0,"message":{"role":"assistant","tool_calls":[{"extra_content":` +
		geminiSignature + `,"function":{"arguments":"{\"city\":\"Paris\",\"days\":2}","name":"weather_forecast"},"id":"function-call-1",` +
		`"type":"function"}]}}],"model":"gemini-3-flash-preview","object":"chat.completion","usage":{"completion_tokens":20,"prompt_tokens":80}}`
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[streamed], func(t *testing.T) {
			reply := serveBody(whole, "application/json")
			req := Request{Messages: testMessages, Tools: testTools}
			if streamed {
				reply = serveBody(stream, "text/event-stream")
				req.OnDelta = func(Delta) {}
			}
			rep, err := backendFor(t, config.OpenAI, "b", newFake(t, reply)).do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ToolCalls) != 1 || rep.FinishReason != FinishToolCalls {
				t.Fatalf("reply %+v", rep)
			}
			if len(rep.ToolCalls[0].Extra) == 0 {
				t.Fatal("the call lost its extra_content")
			}
			if diff := cmp.Diff(jsonAny([]byte(geminiSignature)), jsonAny(rep.ToolCalls[0].Extra)); diff != "" {
				t.Errorf("Extra (-want +got):\n%s", diff)
			}

			f := newFake(t, okReply(config.OpenAI, "ok"))
			next := Request{Tools: testTools, Messages: append(append([]Message(nil), testMessages...), rep.Message(),
				Message{Role: Tool, ToolCallID: rep.ToolCalls[0].ID, Content: "sunny"})}
			if _, err := backendFor(t, config.OpenAI, "b", f).do(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			msgs := f.requests()[0].Body["messages"].([]any)
			call := msgs[len(msgs)-2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
			if diff := cmp.Diff(jsonAny([]byte(geminiSignature)), call["extra_content"]); diff != "" {
				t.Errorf("extra_content sent back (-want +sent):\n%s", diff)
			}
		})
	}
}

// TestAgentKeepsCallExtra: an agent's next request sends each call back
// with its extra_content, also after a restart.
func TestAgentKeepsCallExtra(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same agent", true: "restarted"}[restart], func(t *testing.T) {
			call := toolCall("c1", "calc_v2", `{"Expression":"6*7","Precision":0}`)
			call.Extra = json.RawMessage(geminiSignature)
			r := newLoopRig(t, Reply{ToolCalls: []ToolCall{call}}, Reply{Content: "42."})
			r.deliver("console", "what is 6*7?", "")
			if restart {
				r.a = r.agent()
			}
			if resp := r.deliver("calc.v2", `{"Value":"42"}`, "c1"); answerText(resp) != "42." {
				t.Fatalf("after the answer: %#v", resp)
			}
			reqs := r.model.requests()
			var sent json.RawMessage
			for _, m := range reqs[len(reqs)-1].Messages {
				if m.Role == Assistant && len(m.ToolCalls) > 0 {
					sent = m.ToolCalls[0].Extra
				}
			}
			if len(sent) == 0 {
				t.Fatal("no extra_content sent back with the call")
			}
			if diff := cmp.Diff(jsonAny([]byte(geminiSignature)), jsonAny(sent)); diff != "" {
				t.Errorf("extra sent back (-want +got):\n%s", diff)
			}
		})
	}
}
