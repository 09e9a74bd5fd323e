package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAgentKeepsReasoningWithCalls: an agent's next request, after its
// tool calls' results are in, sends the reasoning blocks of the reply that
// made the calls back with them (anthropic wants them unchanged: see
// TestAnthropicThinkingRoundTrip), also from an agent restarted over the
// same history.
func TestAgentKeepsReasoningWithCalls(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same agent", true: "restarted"}[restart], func(t *testing.T) {
			r := newLoopRig(t,
				Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"6*7","Precision":0}`)},
					Reasoning: json.RawMessage(thinkingBlocks)},
				Reply{Content: "42."})
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
					sent = m.Reasoning
				}
			}
			if len(sent) == 0 {
				t.Fatal("no reasoning sent back with the calls")
			}
			if diff := cmp.Diff(jsonAny([]byte(thinkingBlocks)), jsonAny(sent)); diff != "" {
				t.Errorf("reasoning sent back with the calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHaltedStepKeepsReasoning: a step a halt kept aside (a local tool
// stopped mid-run) keeps the reasoning of the reply that made its calls:
// after the resume, also after a restart, the next request sends it back.
func TestHaltedStepKeepsReasoning(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "resumed", true: "restarted"}[restart], func(t *testing.T) {
			r := newLoopRig(t, Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`), toolCall("s1", "slow", `{}`)},
				Reasoning: json.RawMessage(thinkingBlocks)}, Reply{Content: "done"})
			note, slow := newGateTool("note"), newGateTool("slow")
			r.a.LocalTools = []LocalTool{note.tool(), slow.tool()}
			slow.block(true)
			haltHandling(t, r, message("console", "go", ""), true, r.model, slow.entered)
			slow.block(false)
			if restart {
				r.a = r.agent()
				r.a.LocalTools = []LocalTool{note.tool(), slow.tool()}
			}
			resp, err := message("console", "go", "").handle(context.Background(), r, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := answerText(resp); got != "done" {
				t.Fatalf("answer after the resume %q", got)
			}
			reqs := r.model.requests()
			var sent json.RawMessage
			for _, m := range reqs[len(reqs)-1].Messages {
				if m.Role == Assistant && len(m.ToolCalls) > 0 {
					sent = m.Reasoning
				}
			}
			if len(sent) == 0 {
				t.Fatal("no reasoning sent back with the calls after the resume")
			}
			if diff := cmp.Diff(jsonAny([]byte(thinkingBlocks)), jsonAny(sent)); diff != "" {
				t.Errorf("reasoning (-want +got):\n%s", diff)
			}
		})
	}
}
