package llm

import (
	"strings"
	"testing"
)

// TestLoopControlTokenNotAloneIsExplained: a real token written in a line
// of text (not alone, as §5.3/§6.2 require) decides nothing, but the model
// is told so once in its next turn and may end the answer properly; a
// second misplaced token is delivered as final (the missing-token mapping),
// without the token: it was written at the end of the line, so it goes.
func TestLoopControlTokenNotAloneIsExplained(t *testing.T) {
	tests := []struct {
		name string
		// fixed: whether the model writes the token alone after the note.
		fixed     bool
		want      string
		wantCalls int
	}{
		{"fixed after the note", true, "The answer is 42.", 4},
		{"misplaced again", false, "The answer is 42.", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, m, counters := loopAgent(t, nil, func(n int, req Request) Reply {
				switch n {
				case 0, 2:
					return Reply{ToolCalls: []ToolCall{magicCall("m", "done")}}
				case 1:
					return Reply{Content: "The answer is 42. " + magicResults(req)[0].Content}
				}
				if tt.fixed {
					return Reply{Content: "The answer is 42.\n" + magicResults(req)[0].Content}
				}
				return Reply{Content: "The answer is 42. " + magicResults(req)[0].Content}
			})
			got := answerText(r.deliver("console", "what is 6*7?", ""))
			reqs := m.requests()
			if len(reqs) != tt.wantCalls {
				t.Fatalf("%d model calls, want %d", len(reqs), tt.wantCalls)
			}
			if last := lastMessage(reqs[2]); last.Role != User || !strings.Contains(last.Content, "not alone on its line") {
				t.Fatalf("after the misplaced token the model saw %+v", last)
			}
			if got != tt.want {
				t.Fatalf("answer %q, want %q", got, tt.want)
			}
			snap := counters.Snapshot()
			if tt.fixed && snap.Decisions["done"] != 1 {
				t.Errorf("counters %+v, want one done", snap)
			}
			if !tt.fixed && snap.Decisions["halt/ERR_TOKEN_MISSING"] != 2 {
				t.Errorf("counters %+v, want two missing", snap)
			}
			if r.a.loops.get("t") != nil {
				t.Fatal("the session outlived its turn")
			}
		})
	}
}
