package llm

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoopControlInterimText: the text of a turn a continue token asks
// again is handed to OnInterim, its token line and the blank lines before
// it stripped; a continue turn without text shows nothing, and the final
// answer is no interim text.
func TestLoopControlInterimText(t *testing.T) {
	r, _, _ := loopAgent(t, nil, func(n int, req Request) Reply {
		switch n {
		case 0, 2, 4:
			action := "continue"
			if n == 4 {
				action = "done"
			}
			return Reply{ToolCalls: []ToolCall{magicCall("m", action)}}
		case 1:
			return Reply{Content: "Step one is done.\n\n" + magicResults(req)[0].Content}
		case 3:
			return Reply{Content: magicResults(req)[0].Content}
		}
		return Reply{Content: "The answer is 42.\n" + magicResults(req)[0].Content}
	})
	type shown struct{ Agent, Thread, Text string }
	var mu sync.Mutex
	var got []shown
	r.a.OnInterim = func(agent, thread, text string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, shown{agent, thread, text})
	}
	if answer := answerText(r.deliver("console", "what is 6*7?", "")); answer != "The answer is 42." {
		t.Fatalf("answer %q", answer)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []shown{{r.a.Name, "t", "Step one is done."}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("interim text (-want +got):\n%s", d)
	}
}
