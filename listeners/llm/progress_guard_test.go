package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestProgressGuardCountsOneTurn: the progress guard halts a turn whose
// model repeats itself, but the answers of earlier turns of a continued
// conversation are no repeats — a user may well be answered "Done." or call
// the same tool with the same arguments in every turn.
func TestProgressGuardCountsOneTurn(t *testing.T) {
	same := toolCall("", "poet", `{"Text":"rain"}`)
	tests := []struct {
		name    string
		replies []Reply
		// answer turns one turn: the caller's message, then the answers to
		// the calls the model makes.
		answer func(r *loopRig) string
		want   []string
	}{{
		name:    "the same text each turn",
		replies: []Reply{{Content: "Done."}},
		answer:  func(r *loopRig) string { return answerText(r.deliver("console", "do it", "")) },
		want:    []string{"Done.", "Done.", "Done.", "Done."},
	}, {
		name: "the same call each turn",
		replies: []Reply{{ToolCalls: []ToolCall{same}}, {Content: "A poem."},
			{ToolCalls: []ToolCall{same}}, {Content: "A poem."},
			{ToolCalls: []ToolCall{same}}, {Content: "A poem."},
			{ToolCalls: []ToolCall{same}}, {Content: "A poem."}},
		answer: func(r *loopRig) string {
			resp := r.deliver("console", "a poem about rain", "")
			return answerText(r.deliver("poet", "drops", sendsOf(t, resp)[0].Ref))
		},
		want: []string{"A poem.", "A poem.", "A poem.", "A poem."},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLoopRig(t, tt.replies...)
			var got []string
			for range tt.want {
				got = append(got, tt.answer(r))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProgressGuardHaltsARepeatingTurn: within one turn, the same call
// made three times in a row still halts it.
func TestProgressGuardHaltsARepeatingTurn(t *testing.T) {
	r := newLoopRig(t, Reply{ToolCalls: []ToolCall{toolCall("", "poet", `{"Text":"rain"}`)}})
	resp := r.deliver("console", "a poem about rain", "")
	for range 2 {
		resp = r.deliver("poet", "drops", sendsOf(t, resp)[0].Ref)
	}
	if got, want := answerText(resp), "[mathbot halted: no progress: the same output 3 times in a row]"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
}

// sendsOf returns the messages a response sends (it fails the test when it
// sends none).
func sendsOf(t *testing.T, resp xmlpipe.Response) []*xmlpipe.SendResponse {
	t.Helper()
	s, ok := resp.(*xmlpipe.SendsResponse)
	if !ok || len(s.Sends) == 0 {
		t.Fatalf("response %#v sends nothing", resp)
	}
	return s.Sends
}

// TestProgressGuardHaltLeavesNoCallWaiting: the calls of the reply that
// tripped the guard are never made, so the conversation's next message is
// answered at once — not held for results that never come — and the model
// reads why those calls did not run.
func TestProgressGuardHaltLeavesNoCallWaiting(t *testing.T) {
	same := Reply{ToolCalls: []ToolCall{toolCall("", "poet", `{"Text":"rain"}`)}}
	r := newLoopRig(t, same, same, same, Reply{Content: "Here again."})
	resp := r.deliver("console", "a poem about rain", "")
	for range 2 {
		resp = r.deliver("poet", "drops", sendsOf(t, resp)[0].Ref)
	}
	if got, want := answerText(resp), "[mathbot halted: no progress: the same output 3 times in a row]"; got != want {
		t.Fatalf("answer %q, want %q", got, want)
	}
	if got, want := answerText(r.deliver("console", "are you there?", "")), "Here again."; got != want {
		t.Errorf("next message answered %q, want %q", got, want)
	}
	reqs := r.model.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4", len(reqs))
	}
	last := reqs[3].Messages
	var results []string
	for _, m := range last {
		if m.Role == Tool {
			results = append(results, m.Content)
		}
	}
	want := []string{"drops", "drops", "Not made: the turn halted (no progress: the same output 3 times in a row)."}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("tool results the model read (-want +got):\n%s", diff)
	}
}

// TestHaltEndsPendingCalls: in a history whose halted turn left calls
// without a result (recorded so before those results were), the halt ends
// the wait: nothing is pending.
func TestHaltEndsPendingCalls(t *testing.T) {
	r := newLoopRig(t)
	cr := &callsRecord{Calls: []storedCall{{ID: "c1", Name: "poet", Arguments: `{"Text":"rain"}`}}}
	slots := []registry.Slot{
		{From: "mathbot", PayloadType: callsType, Raw: mustJSON(cr)},
		{From: "mathbot", PayloadType: haltType, Raw: []byte("no progress")},
	}
	if c := r.a.readConvo(slots[:1], "console"); len(c.pending) != 1 {
		t.Fatalf("calls alone: %d pending, want 1", len(c.pending))
	}
	if c := r.a.readConvo(slots, "console"); len(c.pending) != 0 {
		t.Errorf("calls then a halt: pending %v, want none", c.pending)
	}
}
