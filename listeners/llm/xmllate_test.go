package llm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestXMLLateAnswerWaitsForNextTurn: an XML-mode reply addressed two peers
// and the model answered its caller after the first answer; the second
// answer, arriving after that, does not ask the model again (its caller has
// its answer, so whatever the model wrote would be lost yet recorded as
// said). The late answer is read at the next turn.
func TestXMLLateAnswerWaitsForNextTurn(t *testing.T) {
	tests := []struct {
		name string
		// late delivers the message that arrives after the answer.
		late      func(r *loopRig) any
		wantAsked int // model calls once the late message is handled
	}{
		{"a peer's late answer", func(r *loopRig) any { return r.deliver("poet", "the second poem", "") }, 2},
		{"the caller's next message", func(r *loopRig) any { return answerText(r.deliver("console", "the second poem", "")) }, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, Reply{Content: "<PoetTask><Text>a</Text></PoetTask><PoetTask><Text>b</Text></PoetTask>"},
				Reply{Content: "Both poems are in."}, Reply{Content: "Next."})
			r.a.ToolCalling = XMLTools
			r.deliver("console", "two poems", "")
			if got := answerText(r.deliver("poet", "the first poem", "")); got != "Both poems are in." {
				t.Fatalf("answer %q", got)
			}
			got := tc.late(r)
			if n := len(r.model.requests()); n != tc.wantAsked {
				t.Fatalf("the model was asked %d times, want %d (late message answered %v)", n, tc.wantAsked, got)
			}
			if tc.wantAsked == 2 {
				if got != nil {
					t.Errorf("late answer handled with %#v, want nothing", got)
				}
				if got := answerText(r.deliver("console", "next", "")); got != "Next." {
					t.Errorf("next turn answered %q", got)
				}
			}
			reqs := r.model.requests()
			var last []string
			for _, m := range reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-2:] {
				last = append(last, strings.TrimSpace(m.Content))
			}
			want := []string{"[From poet]\nthe second poem", "[From console]\nnext"}
			if tc.wantAsked == 3 {
				want = []string{"Both poems are in.", "[From console]\nthe second poem"}
			}
			if diff := cmp.Diff(want, last); diff != "" {
				t.Errorf("the last request ends (-want +got):\n%s", diff)
			}
		})
	}
}
