package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// strictOpenAI answers like OpenAI's Chat Completions: a tool call id
// longer than 40 characters, or a tool message that answers no call made
// before it, is refused with OpenAI's 400; anything else gets text.
func strictOpenAI(w http.ResponseWriter, r *http.Request, body map[string]any) {
	made := map[string]bool{}
	refuse := func(param, msg, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error",
			"param": param, "code": code}})
	}
	tooLong := func(param, id string) bool {
		if len(id) <= 40 {
			return false
		}
		refuse(param, fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length 40, but "+
			"got a string with length %d instead.", param, len(id)), "string_above_max_length")
		return true
	}
	msgs, _ := body["messages"].([]any)
	for i, m := range msgs {
		m, _ := m.(map[string]any)
		calls, _ := m["tool_calls"].([]any)
		for j, c := range calls {
			id, _ := c.(map[string]any)["id"].(string)
			if tooLong(fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j), id) {
				return
			}
			made[id] = true
		}
		if m["role"] != "tool" {
			continue
		}
		id, _ := m["tool_call_id"].(string)
		if tooLong(fmt.Sprintf("messages[%d].tool_call_id", i), id) {
			return
		}
		if !made[id] {
			refuse(fmt.Sprintf("messages[%d].tool_call_id", i), "Invalid parameter: messages with role 'tool' must "+
				"be a response to a preceeding message with 'tool_calls'.", "")
			return
		}
	}
	okReply(config.OpenAI, "42 and 4")(w, r)
}

// strictOpenAIServer is a fake provider answering with strictOpenAI.
func strictOpenAIServer(t *testing.T) *fakeProvider {
	t.Helper()
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		strictOpenAI(w, r, body)
	}))
	t.Cleanup(f.Close)
	return f
}

// callsReply answers provider p's protocol with a reply calling calculate
// once per id ("" leaves the id out, as Ollama does).
func callsReply(p config.Provider, ids ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		switch p {
		case config.Anthropic:
			var blocks []any
			for _, id := range ids {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": "calculate",
					"input": map[string]any{"expression": "6*7"}})
			}
			writeJSON(w, map[string]any{"model": "claude-x", "content": blocks, "stop_reason": "tool_use",
				"usage": map[string]any{"input_tokens": 11, "output_tokens": 7}})
		case config.Ollama:
			var calls []any
			for range ids {
				calls = append(calls, map[string]any{"function": map[string]any{"name": "calculate",
					"arguments": map[string]any{"expression": "6*7"}}})
			}
			writeJSON(w, map[string]any{"model": "llama3.2", "message": map[string]any{"role": "assistant",
				"content": "", "tool_calls": calls}, "done": true, "prompt_eval_count": 11, "eval_count": 7})
		default:
			var calls []any
			for _, id := range ids {
				calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{
					"name": "calculate", "arguments": `{"expression":"6*7"}`}})
			}
			writeJSON(w, map[string]any{"model": "m", "choices": []any{map[string]any{"message": map[string]any{
				"role": "assistant", "content": nil, "tool_calls": calls}, "finish_reason": "tool_calls"}},
				"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
		}
	}
}

// TestToolCallIDsMovedToOpenAI: a conversation whose tool calls were made
// on another provider (an agent reloaded onto OpenAI) goes on on OpenAI,
// whose 40-character limit on tool call ids would refuse the longer ids
// some servers give: each call and its result carry the same id of at most
// 40 characters on the OpenAI wire, distinct for distinct calls, and ids
// OpenAI takes go as they are.
func TestToolCallIDsMovedToOpenAI(t *testing.T) {
	vllm := "chatcmpl-tool-" + strings.Repeat("5d1c0f3e", 4) // vLLM: 46 characters
	long := strings.Repeat("x", 200)                         // any compatible server's, within stage.MaxRefBytes
	cases := []struct {
		name     string
		from     config.Provider
		ids      []string
		keptAsIs bool // every id goes to OpenAI unchanged
	}{
		{name: "anthropic", from: config.Anthropic, ids: []string{"toolu_01A09q90qw90lq917835lq9", "toolu_01CqbHu3Z9W6ZPiNv9VLY7Xk"},
			keptAsIs: true},
		{name: "ollama (minted)", from: config.Ollama, ids: []string{"", ""}, keptAsIs: true},
		{name: "vllm", from: config.OpenAI, ids: []string{vllm, vllm[:45] + "0"}},
		{name: "long ids sharing 40 characters", from: config.OpenAI, ids: []string{long, long[:199] + "y"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := backendFor(t, tc.from, "src", newFake(t, callsReply(tc.from, tc.ids...)))
			rep, err := src.do(context.Background(), Request{Messages: []Message{{Role: User, Content: "6*7 twice"}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ToolCalls) != len(tc.ids) {
				t.Fatalf("%d calls from %s, want %d", len(rep.ToolCalls), tc.from, len(tc.ids))
			}
			msgs := []Message{{Role: User, Content: "6*7 twice"}, {Role: Assistant, ToolCalls: rep.ToolCalls}}
			for _, c := range rep.ToolCalls {
				msgs = append(msgs, Message{Role: Tool, ToolCallID: c.ID, ToolName: c.Name, Content: "42"})
			}
			f := strictOpenAIServer(t)
			got, err := backendFor(t, config.OpenAI, "openai", f).do(context.Background(), Request{Messages: msgs})
			if err != nil {
				t.Fatalf("the conversation moved to OpenAI was refused: %v", err)
			}
			if got.Content != "42 and 4" {
				t.Fatalf("reply %q", got.Content)
			}
			wire := f.requests()[0].Body["messages"].([]any)
			var callIDs, resultIDs []string
			for _, c := range wire[1].(map[string]any)["tool_calls"].([]any) {
				callIDs = append(callIDs, c.(map[string]any)["id"].(string))
			}
			for _, m := range wire[2:] {
				resultIDs = append(resultIDs, m.(map[string]any)["tool_call_id"].(string))
			}
			if diff := cmp.Diff(callIDs, resultIDs); diff != "" {
				t.Errorf("results' ids differ from their calls' (-calls +results):\n%s", diff)
			}
			if callIDs[0] == callIDs[1] {
				t.Errorf("two calls share the id %q on the wire", callIDs[0])
			}
			var kept []string
			for _, c := range rep.ToolCalls {
				kept = append(kept, c.ID)
			}
			if same := cmp.Equal(kept, callIDs); same != tc.keptAsIs {
				t.Errorf("ids on the OpenAI wire %q for the calls %q: kept as is %v, want %v", callIDs, kept, same,
					tc.keptAsIs)
			}
		})
	}
}
