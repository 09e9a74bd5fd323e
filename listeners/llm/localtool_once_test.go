package llm

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestLocalToolOnce: identical calls of a Once tool in one reply — the
// same JSON arguments however written — are made once (one message sent,
// as remember sends one memory), the repeat answered at once; a call with
// other arguments is made, and a tool without Once is called every time.
func TestLocalToolOnce(t *testing.T) {
	r := newLoopRig(t,
		Reply{ToolCalls: []ToolCall{
			toolCall("l1", "remember", `{"fact":"sky is blue","tags":["a"]}`),
			toolCall("l2", "remember", `{ "tags": ["a"], "fact": "sky is blue" }`),
			toolCall("l3", "remember", `{"fact":"grass is green"}`),
			toolCall("l4", "count", `{}`),
			toolCall("l5", "count", `{}`),
		}},
		Reply{Content: "remembered"})
	var remembered []string
	counted := 0
	r.a.LocalTools = []LocalTool{
		{Spec: ToolSpec{Name: "remember"}, Once: true, Sends: []string{"poet"},
			Call: func(_ context.Context, c LocalCall) (LocalResult, error) {
				remembered = append(remembered, c.ID)
				return LocalResult{Send: xmlpipe.Send("poet", &PoetTask{Text: string(c.Arguments)}).(*xmlpipe.SendResponse)}, nil
			}},
		{Spec: ToolSpec{Name: "count"}, Call: func(context.Context, LocalCall) (LocalResult, error) {
			counted++
			return LocalResult{Content: "counted"}, nil
		}},
	}
	resp := r.deliver("console", "go", "")
	sends, ok := resp.(*xmlpipe.SendsResponse)
	if !ok {
		t.Fatalf("response %#v, want the sends of the calls made", resp)
	}
	var refs []string
	for _, s := range sends.Sends {
		refs = append(refs, s.Ref)
	}
	if diff := cmp.Diff([]string{"l1", "l3"}, refs); diff != "" {
		t.Errorf("messages sent for the calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"l1", "l3"}, remembered); diff != "" {
		t.Errorf("remember made for the calls (-want +got):\n%s", diff)
	}
	if counted != 2 {
		t.Errorf("a tool without Once was called %d times for two calls, want 2", counted)
	}
	r.deliver("poet", "kept 1", "l1")
	if got := answerText(r.deliver("poet", "kept 2", "l3")); got != "remembered" {
		t.Fatalf("answer %q", got)
	}
	reqs := r.model.requests()
	results := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.ToolCallID != "" {
			results[m.ToolCallID] = m.Content
		}
	}
	if got := results["l2"]; !strings.Contains(got, "The same call as l1") {
		t.Errorf("result of the repeated call = %q, want it to point at l1", got)
	}
	if results["l1"] != "kept 1" || results["l3"] != "kept 2" {
		t.Errorf("results %v", results)
	}
}
