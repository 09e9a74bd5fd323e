package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// thinkingBlocks are the reasoning blocks of testdata/anthropic/*_thinking_tool.*.
const thinkingBlocks = `[{"type":"thinking","thinking":"The user wants 6*7. I should use the calculator.",` +
	`"signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},` +
	`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB9URj2pLmN3kF8/dW5hR7xJ0aP"}]`

// TestAnthropicThinkingRoundTrip: with extended thinking, a reply begins
// with thinking blocks (their text, then a signature_delta when streamed)
// and redacted_thinking blocks; "during tool use, you must pass thinking
// and redacted_thinking blocks back to the API, and you must include the
// complete unmodified block" (docs.anthropic.com/en/docs/build-with-claude/
// extended-thinking, "Preserving thinking blocks"; the stream shapes:
// build-with-claude/streaming, "Streaming request with extended
// thinking"). The reply keeps them, shows none of their text, and the
// Assistant message it continues with sends them back first, unchanged.
func TestAnthropicThinkingRoundTrip(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[streamed], func(t *testing.T) {
			reply := serveFile(t, "anthropic/reply_thinking_tool.json", "application/json")
			if streamed {
				reply = serveFile(t, "anthropic/stream_thinking_tool.sse", "text/event-stream")
			}
			f := newFake(t, reply)
			b := backendFor(t, config.Anthropic, "b", f)
			req := Request{Messages: []Message{{Role: User, Content: "What is 6*7?"}}, Tools: testTools}
			var text strings.Builder
			if streamed {
				req.OnDelta = func(d Delta) { text.WriteString(d.Text) }
			}
			rep, err := b.do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Content != "Let me compute that." || len(rep.ToolCalls) != 1 || rep.FinishReason != FinishToolCalls {
				t.Fatalf("reply %+v", rep)
			}
			if streamed && text.String() != "Let me compute that." {
				t.Errorf("streamed text %q: thinking is not the answer", text.String())
			}
			if diff := cmp.Diff(jsonAny([]byte(thinkingBlocks)), jsonAny(rep.Reasoning)); diff != "" {
				t.Errorf("Reasoning (-want +got):\n%s", diff)
			}

			next := Request{Tools: testTools, Messages: []Message{{Role: User, Content: "What is 6*7?"}, rep.Message(),
				{Role: Tool, ToolCallID: rep.ToolCalls[0].ID, Content: "42"}}}
			f2 := newFake(t, okReply(config.Anthropic, "42"))
			if _, err := backendFor(t, config.Anthropic, "b", f2).do(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			want := jsonAny([]byte(`{"role":"assistant","content":[` + thinkingBlocks[1:len(thinkingBlocks)-1] + `,
				{"type":"text","text":"Let me compute that."},
				{"type":"tool_use","id":"toolu_01Thk","name":"calculate","input":{"expression":"6*7"}}]}`))
			msgs := f2.requests()[0].Body["messages"].([]any)
			if diff := cmp.Diff(want, msgs[1]); diff != "" {
				t.Errorf("assistant turn sent back (-want +sent):\n%s", diff)
			}
		})
	}
}

// TestReasoningStaysWithAnthropic: the other providers have no place for
// Anthropic's blocks; a conversation moved to them sends none.
func TestReasoningStaysWithAnthropic(t *testing.T) {
	for _, p := range []config.Provider{config.OpenAI, config.Ollama} {
		t.Run(string(p), func(t *testing.T) {
			f := newFake(t, okReply(p, "ok"))
			msgs := []Message{{Role: User, Content: "hi"},
				{Role: Assistant, Content: "hello", Reasoning: json.RawMessage(thinkingBlocks)}, {Role: User, Content: "bye"}}
			if _, err := backendFor(t, p, "b", f).do(context.Background(), Request{Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(f.requests()[0].Body)
			if strings.Contains(string(body), "signature") || strings.Contains(string(body), "thinking") {
				t.Errorf("request carries the reasoning blocks: %s", body)
			}
		})
	}
}
