package llm

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestToolCallTextIsInterim: the text a model writes beside its tool calls
// (native mode: "Let me compute that.") is no answer, so it reaches
// OnInterim, once; a reply of calls alone shows nothing, and the final
// answer is no interim text.
func TestToolCallTextIsInterim(t *testing.T) {
	r := newLoopRig(t,
		Reply{Content: "Let me compute that.", ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"6*7"}`)}},
		Reply{ToolCalls: []ToolCall{toolCall("c2", "calc_v2", `{"Expression":"1+1"}`)}},
		Reply{Content: "It is 42."})
	type shown struct{ Agent, Thread, Text string }
	var mu sync.Mutex
	var got []shown
	r.a.OnInterim = func(agent, thread, text string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, shown{agent, thread, text})
	}
	if _, ok := r.deliver("console", "what is 6*7?", "").(*xmlpipe.SendsResponse); !ok {
		t.Fatal("the first reply's call was not sent")
	}
	if _, ok := r.deliver("calc.v2", `{"Value":"42"}`, "c1").(*xmlpipe.SendsResponse); !ok {
		t.Fatal("the second reply's call was not sent")
	}
	if answer := answerText(r.deliver("calc.v2", `{"Value":"2"}`, "c2")); answer != "It is 42." {
		t.Fatalf("answer %q", answer)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []shown{{r.a.Name, "t", "Let me compute that."}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("interim text (-want +got):\n%s", d)
	}
}
