package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// strictAnthropicServer is a fake Anthropic Messages API that refuses, as
// Anthropic does, a tool_use id or tool_use_id not matching
// ^[a-zA-Z0-9_-]+$ and a tool_result that answers no tool_use made before
// it; anything else gets text.
func strictAnthropicServer(t *testing.T) *fakeProvider {
	t.Helper()
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		refuse := func(msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
				"message": msg}})
		}
		made := map[string]bool{}
		msgs, _ := body["messages"].([]any)
		for i, m := range msgs {
			blocks, _ := m.(map[string]any)["content"].([]any)
			for j, b := range blocks {
				b, _ := b.(map[string]any)
				var id, field string
				switch b["type"] {
				case "tool_use":
					id, _ = b["id"].(string)
					field = "tool_use.id"
				case "tool_result":
					id, _ = b["tool_use_id"].(string)
					field = "tool_result.tool_use_id"
				default:
					continue
				}
				if !pattern.MatchString(id) {
					refuse(fmt.Sprintf("messages.%d.content.%d.%s: String should match pattern '^[a-zA-Z0-9_-]+$'",
						i, j, field))
					return
				}
				if b["type"] == "tool_use" {
					made[id] = true
				} else if !made[id] {
					refuse(fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` "+
						"blocks: %s", i, j, id))
					return
				}
			}
		}
		okReply(config.Anthropic, "42 and 42")(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// TestToolCallIDsMovedToAnthropic: a conversation whose tool calls were
// made on another provider goes on on Anthropic, which refuses ids with
// characters outside [a-zA-Z0-9_-] (Moonshot's "functions.calculate:0"):
// each call and its result carry the same id Anthropic takes, distinct for
// distinct calls, and ids Anthropic takes go as they are.
func TestToolCallIDsMovedToAnthropic(t *testing.T) {
	cases := []struct {
		name     string
		from     config.Provider
		ids      []string
		keptAsIs bool
	}{
		{name: "openai", from: config.OpenAI, ids: []string{"call_abc123", "call_def456"}, keptAsIs: true},
		{name: "ollama (minted)", from: config.Ollama, ids: []string{"", ""}, keptAsIs: true},
		{name: "moonshot", from: config.OpenAI, ids: []string{"functions.calculate:0", "functions.calculate:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := backendFor(t, tc.from, "src", newFake(t, callsReply(tc.from, tc.ids...)))
			rep, err := src.do(context.Background(), Request{Messages: []Message{{Role: User, Content: "6*7 twice"}}})
			if err != nil {
				t.Fatal(err)
			}
			msgs := []Message{{Role: User, Content: "6*7 twice"}, {Role: Assistant, ToolCalls: rep.ToolCalls}}
			for _, c := range rep.ToolCalls {
				msgs = append(msgs, Message{Role: Tool, ToolCallID: c.ID, ToolName: c.Name, Content: "42"})
			}
			f := strictAnthropicServer(t)
			got, err := backendFor(t, config.Anthropic, "anthropic", f).do(context.Background(), Request{Messages: msgs})
			if err != nil {
				t.Fatalf("the conversation moved to Anthropic was refused: %v", err)
			}
			if got.Content != "42 and 42" {
				t.Fatalf("reply %q", got.Content)
			}
			wire := f.requests()[0].Body["messages"].([]any)
			var callIDs, resultIDs []string
			for _, b := range wire[1].(map[string]any)["content"].([]any) {
				callIDs = append(callIDs, b.(map[string]any)["id"].(string))
			}
			for _, b := range wire[2].(map[string]any)["content"].([]any) {
				resultIDs = append(resultIDs, b.(map[string]any)["tool_use_id"].(string))
			}
			if diff := cmp.Diff(callIDs, resultIDs); diff != "" {
				t.Errorf("results' ids differ from their calls' (-calls +results):\n%s", diff)
			}
			if len(callIDs) != 2 || callIDs[0] == callIDs[1] {
				t.Errorf("ids on the wire %q, want two distinct", callIDs)
			}
			var kept []string
			for _, c := range rep.ToolCalls {
				kept = append(kept, c.ID)
			}
			if same := cmp.Equal(kept, callIDs); same != tc.keptAsIs {
				t.Errorf("ids on the Anthropic wire %q for the calls %q: kept as is %v, want %v", callIDs, kept, same,
					tc.keptAsIs)
			}
		})
	}
}
