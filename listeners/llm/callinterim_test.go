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

// TestXMLModeProseIsInterim: in XML mode the text a reply writes before its
// first peer element — what its stream shows — is interim text too, its
// trailing line breaks aside; a reply that is all elements shows nothing,
// and an answer with markup naming no peer is no interim text.
func TestXMLModeProseIsInterim(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        []string
	}{
		{"prose then a message", "I will ask the poet.\n<PoetTask><Text>x</Text></PoetTask> and wait", []string{"I will ask the poet."}},
		{"a message alone", "<PoetTask><Text>x</Text></PoetTask>", nil},
		{"an answer", "a <b>bold</b> move", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, Reply{Content: tc.reply})
			r.a.ToolCalling = XMLTools
			var got []string
			r.a.OnInterim = func(agent, thread, text string) { got = append(got, text) }
			r.deliver("console", "go", "")
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("interim text (-want +got):\n%s", d)
			}
		})
	}
}
