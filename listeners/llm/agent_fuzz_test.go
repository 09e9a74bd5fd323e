package llm

import (
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// FuzzPeerElements: whatever a model writes in XML mode, the messages cut
// from it are pieces of the text, each starting with a peer's start tag,
// and the streamed prose never shows a peer's element.
func FuzzPeerElements(f *testing.F) {
	for _, s := range []string{"In HTML you would write <b>rain</b>.", "<PoetTask><Text>x</Text></PoetTask>",
		"a <PoetTask/> b <Calc><PoetTask>", "<PoetTask", "<", "</PoetTask>", "<p:PoetTask >x</p:PoetTask>",
		"<PoetTask><PoetTask></PoetTask>"} {
		f.Add(s, 3)
	}
	targets := map[string]bool{"PoetTask": true, "Calc": true}
	f.Fuzz(func(t *testing.T, text string, split int) {
		prev := 0
		for _, sp := range peerSpans(text, targets) {
			if sp[0] < prev || sp[1] <= sp[0] || sp[1] > len(text) {
				t.Fatalf("span %v after %d in %q", sp, prev, text)
			}
			if name, _ := tagAt(text, sp[0]); !targets[name] {
				t.Fatalf("message %q does not start with a peer's tag", text[sp[0]:sp[1]])
			}
			prev = sp[1]
		}
		a := &Agent{Name: "x"}
		var shown strings.Builder
		a.OnDelta = func(_, _, d string, _ bool) { shown.WriteString(d) }
		feed := a.prose("t", targets)
		if split < 0 {
			split = -split
		}
		for i := 0; i < len(text); {
			n := min(split%7+1, len(text)-i)
			feed(Delta{Text: text[i : i+n]})
			i += n
		}
		if !strings.HasPrefix(text, shown.String()) {
			t.Fatalf("shown %q is not a prefix of %q", shown.String(), text)
		}
		if start, _ := peerStart(text, targets); start >= 0 && shown.Len() > start {
			t.Fatalf("shown %q runs into the peer element at %d of %q", shown.String(), start, text)
		}
	})
}

// FuzzToolCalls: whatever calls a model makes — any name, any arguments —
// each is either sent to the peer behind its function with a payload of
// the peer's type, or answered at once with a failed result; nothing
// panics and no call is left without one or the other.
func FuzzToolCalls(f *testing.F) {
	f.Add("calc_v2", `{"Expression":"6*7"}`, "poet", `{"Text":1}`)
	f.Add("nope", `{`, "poet", `{"Text":"a","Text":"b"}`)
	f.Add("calc_v2", `{"Expression":"6*7","Precision":-1}`, "calc_v2", `{"Expression":"\u0000"}`)
	f.Add("", `[]`, "poet", `null`)
	f.Fuzz(func(t *testing.T, name1, args1, name2, args2 string) {
		r := newLoopRig(t, Reply{ToolCalls: []ToolCall{newToolCall("a", name1, []byte(args1)),
			newToolCall("b", name2, []byte(args2))}}, Reply{Content: "done"})
		st := &turnState{md: xmlpipe.Metadata{ThreadID: "t", Peers: r.peers}, mode: NativeTools, session: "t",
			c: r.a.readConvo(nil, "")}
		box := r.a.toolbox(r.peers)
		raw := r.model.replies[0].ToolCalls
		calls := r.a.mintIDs(st, raw)
		r.a.record(st, registry.Slot{PayloadType: callsType, Raw: mustJSON(callsRecord{Calls: calls})})
		sends, results, stopped := r.a.dispatch(t.Context(), st, box, raw, calls, nil, nil)
		if stopped != nil {
			t.Fatalf("dispatch stopped: %v", stopped)
		}
		for _, res := range results {
			r.a.recordResult(st, res)
		}
		sent := map[string]bool{}
		for _, s := range sends {
			sent[s.Ref] = true
			enc, ok := s.Payload.(*xmlpipe.Encoded)
			if !ok || enc.Type == nil || !strings.HasPrefix(string(enc.XML), "<"+enc.Type.Name()) {
				t.Fatalf("send %+v", s)
			}
			if _, err := enc.Type.Decode(enc.XML); err != nil {
				t.Fatalf("the payload sent does not decode: %v: %s", err, enc.XML)
			}
		}
		for _, c := range calls {
			res := st.c.results[c.ID]
			if sent[c.ID] == (res != nil) {
				t.Fatalf("call %+v: sent %v, result %+v", c, sent[c.ID], res)
			}
			if res != nil && (!res.IsError || res.Content == "") {
				t.Fatalf("a refused call's result %+v", res)
			}
		}
	})
}
