package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestOllamaTextThenCalls: Ollama streams text in messages with
// done:false, then each tool call whole — arguments a JSON object — in a
// message of its own, still done:false, and ends with done:true and
// done_reason "stop" (ollama.com/blog/streaming-tool; docs/api.md, "Chat
// request (with tools)"); a thinking model's thinking comes in the
// message's thinking field, which is not the answer.
func TestOllamaTextThenCalls(t *testing.T) {
	stream := `{"model":"qwen3","created_at":"2025-05-27T22:54:57.1Z","message":{"role":"assistant","content":"","thinking":"The user wants two things."},"done":false}
{"model":"qwen3","created_at":"2025-05-27T22:54:57.2Z","message":{"role":"assistant","content":"Let me "},"done":false}
{"model":"qwen3","created_at":"2025-05-27T22:54:57.3Z","message":{"role":"assistant","content":"look."},"done":false}
{"model":"qwen3","created_at":"2025-05-27T22:54:57.4Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"calculate","arguments":{"expression":"6*7"}}}]},"done":false}
{"model":"qwen3","created_at":"2025-05-27T22:54:57.5Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather_forecast","arguments":{"city":"Paris","days":2}}}]},"done":false}
{"model":"qwen3","created_at":"2025-05-27T22:54:57.6Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"prompt_eval_count":122,"eval_count":33}
`
	var text string
	rep, err := backendFor(t, config.Ollama, "b", newFake(t, serveBody(stream, "application/x-ndjson"))).do(context.Background(),
		Request{Messages: testMessages, Tools: testTools, OnDelta: func(d Delta) { text += d.Text }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Content != "Let me look." || text != "Let me look." || rep.FinishReason != FinishToolCalls {
		t.Errorf("reply %+v, streamed %q", rep, text)
	}
	var got []string
	for _, c := range rep.ToolCalls {
		if c.ID == "" || c.Err != nil {
			t.Errorf("call %+v", c)
		}
		var v any
		_ = json.Unmarshal(c.Arguments, &v)
		b, _ := json.Marshal(v)
		got = append(got, c.Name+" "+string(b))
	}
	want := []string{`calculate {"expression":"6*7"}`, `weather_forecast {"city":"Paris","days":2}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
