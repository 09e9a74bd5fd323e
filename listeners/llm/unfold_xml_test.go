package llm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// unfoldingXMLModel is unfoldingModel for a model without function
// calling (XML mode): it unfolds by writing <ContextUnfold> elements in its
// reply, as the folded notes tell it, and reads on with the offset a page
// gives.
func unfoldingXMLModel(req Request) Reply {
	fact := regexp.MustCompile(`vault code is ([A-Z]+-[A-Z]+)`)
	last := req.Messages[len(req.Messages)-1]
	reading := last.Role == User && strings.HasPrefix(last.Content, unfoldedPrefix)
	if !strings.Contains(last.Content, "What is the vault code") && !reading {
		return Reply{Content: fmt.Sprintf("Noted (%d).", len(req.Messages))}
	}
	if reading {
		if f := fact.FindStringSubmatch(last.Content); f != nil {
			return Reply{Content: "The vault code is " + f[1] + "."}
		}
		if more := regexp.MustCompile(`<ContextUnfold><Id>s\d+</Id><Offset>\d+</Offset></ContextUnfold>`).
			FindString(last.Content); more != "" {
			return Reply{Content: "Reading on.\n" + more}
		}
	}
	for _, m := range req.Messages {
		if el := regexp.MustCompile(`write (<ContextUnfold><Id>s\d+</Id></ContextUnfold>) to read it`).
			FindStringSubmatch(m.Content); el != nil && strings.Contains(m.Content, "folded —") {
			return Reply{Content: "Let me look at my notes. " + el[1]}
		}
	}
	return Reply{Content: "I do not know."}
}

// TestSmallBudgetRemembersByUnfoldingXML is TestSmallBudgetRemembersByUnfolding
// for an agent in XML mode: the librarian folds and evicts its context the
// same way, its notes say how to unfold in the agent's own form (an
// element, no function is offered), and the agent answers a question about
// an early message by writing <ContextUnfold> elements, page after page.
// Every request fits the budget; without a librarian it does not know.
func TestSmallBudgetRemembersByUnfoldingXML(t *testing.T) {
	const window = 2048
	chatter := []string{"What a nice day it was today.", "Tomorrow we sail to the island at dawn.",
		"Remind me to buy bread and milk.", "The neighbours are painting their fence green.",
		"My sister calls on Sundays.", "The train was late again this morning."}
	run := func(lib *Librarian) (string, *chatFunc, int, *loopRig) {
		r, m := librarianRig(t, window, lib, unfoldingXMLModel)
		r.a.ToolCalling = XMLTools
		r.peers = nil
		r.deliver("console", vaultNotes(), "")
		for _, s := range chatter {
			r.deliver("console", s, "")
		}
		asked := len(m.requests())
		return answerText(r.deliver("console", "What is the vault code from my notes?", "")), m, asked, r
	}
	got, m, asked, r := run(&Librarian{FoldBelow: 0.08, UnfoldAbove: 0.2, KeepRecent: 1, MinFoldTokens: 64})
	if got != "The vault code is KESTREL-ALPHA." {
		t.Fatalf("answer %q", got)
	}
	reqs := m.requests()
	budget := window - completionReserve(window, 0)
	for i, req := range reqs {
		if got := requestTokens(req); got > budget {
			t.Errorf("request %d: %d tokens, budget %d", i, got, budget)
		}
		if len(req.Tools) > 0 {
			t.Errorf("request %d offers functions in XML mode: %v", i, req.Tools)
		}
		all := fmt.Sprint(req.Messages)
		if strings.Contains(all, unfoldTool) {
			t.Errorf("request %d names the %s function to an XML-mode model", i, unfoldTool)
		}
		if !strings.Contains(all, xmlUnfoldNote) {
			t.Errorf("request %d does not say how to unfold", i)
		}
	}
	if strings.Contains(fmt.Sprint(reqs[asked].Messages), "KESTREL") {
		t.Error("the fact was in the context before the model unfolded it")
	}
	pages := 0
	for _, req := range reqs[asked:] {
		if last := req.Messages[len(req.Messages)-1]; last.Role == User && strings.HasPrefix(last.Content, "Part s0 ") {
			pages++
		}
	}
	if pages < 2 {
		t.Errorf("%d pages read, want the fact on the second", pages)
	}
	// The tiers are recorded as in native mode: s0 was folded, then read.
	if seg, ok := tiers(t, r.cb)["s0"]; !ok || !seg.Scored {
		t.Errorf("s0's tier not recorded: %+v", seg)
	}
	if got, _, _, _ := run(nil); got != "I do not know." {
		t.Fatalf("without a librarian: %q", got)
	}
}

// TestXMLUnfoldAnswers: what an XML-mode unfold element is answered with —
// the list, a part, and clear words for what cannot be read.
func TestXMLUnfoldAnswers(t *testing.T) {
	r, _ := librarianRig(t, 2048, &Librarian{FoldBelow: 0.08, KeepRecent: 1, MinFoldTokens: 64}, unfoldingXMLModel)
	r.a.ToolCalling = XMLTools
	r.peers = nil
	r.deliver("console", vaultNotes(), "")
	r.deliver("console", "Tomorrow we sail to the island at dawn.", "")
	r.deliver("console", "The neighbours are painting their fence green.", "")
	for _, c := range []struct{ elem, want string }{
		{`<ContextUnfold/>`, "Folded and evicted parts of this conversation, newest first (<ContextUnfold> with an id reads one):\ns0 ("},
		{`<ContextUnfold><Id>s0</Id></ContextUnfold>`, "Part s0 (message from console, "},
		{`<ContextUnfold><Id>s0</Id><Offset>100</Offset></ContextUnfold>`, "Part s0 (message from console, 3.4 KB) unfolded, bytes 100 to"},
		{`<ContextUnfold><Id>s99</Id></ContextUnfold>`, `<ContextUnfold> failed: there is no part "s99" of this conversation: its parts run from s0 to s`}, // the last that is, not an example id the model might take for one
		{`<ContextUnfold><Id>s0</Id><Offset>-3</Offset></ContextUnfold>`, `<ContextUnfold>: the offset "-3" is not a byte offset`},
		{`<ContextUnfold><Id>s0</Id><Offset>999999</Offset></ContextUnfold>`, `<ContextUnfold> failed: offset 999999 is past the end of s0`},
		{`<ContextUnfold><Id>s0</Id>`, `Your <ContextUnfold> could not be read`},
	} {
		if got := r.a.xmlUnfold("t", c.elem); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\n got %.200q\nwant %q…", c.elem, got, c.want)
		}
	}
	if id := unfoldedID("Part s3 (note, 12 B) unfolded:\nhi"); id != "s3" {
		t.Errorf("unfoldedID %q", id)
	}
	if id := unfoldedID("Part of the plan"); id != "" {
		t.Errorf("unfoldedID of a plain text %q", id)
	}
}

// FuzzXMLUnfold: whatever an XML-mode model writes in a reply, the
// <ContextUnfold> elements in it are answered without panicking, each
// answer a part of the folded segment, a list, or words saying what was
// wrong; an answer giving a part names a segment that exists.
func FuzzXMLUnfold(f *testing.F) {
	f.Add(`Let me look. <ContextUnfold><Id>s0</Id></ContextUnfold>`, "hello world")
	f.Add(`<ContextUnfold><Id>s0</Id><Offset>3</Offset></ContextUnfold>`, "Grüße 東京 ✓")
	f.Add(`<ContextUnfold/><ContextUnfold><Id>s9</Id>`, "x")
	f.Add(`<ContextUnfold><Offset>99999999999999999999</Offset></ContextUnfold>`, "")
	f.Add(`<ContextUnfold id="s0"><Id><![CDATA[s0]]></Id><Id>s1</Id></ContextUnfold>`, "a")
	f.Fuzz(func(t *testing.T, reply, text string) {
		cb, err := registry.NewContextBuffer(registry.ContextConfig{})
		if err != nil {
			t.Fatal(err)
		}
		own, err := InputType("mathbot")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := stage.NewTextPayload(own.GoType(), text)
		if _, err := cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot", PayloadType: own.Name(),
			Payload: v, Raw: []byte("<x/>")}); err != nil {
			t.Fatal(err)
		}
		if _, err := cb.Fold("t", 0, "folded", extractiveBy); err != nil {
			t.Fatal(err)
		}
		a := &Agent{Name: "mathbot", History: cb, ContextWindow: 1024, Librarian: &Librarian{}, LLM: &chatFunc{t: t},
			ToolCalling: XMLTools}
		for _, sp := range peerSpans(reply, map[string]bool{unfoldElement: true}) {
			got := a.xmlUnfold("t", reply[sp[0]:sp[1]])
			if got == "" {
				t.Fatalf("no answer to %q", reply[sp[0]:sp[1]])
			}
			if id := unfoldedID(got); id != "" && id != "s0" {
				t.Fatalf("answer names segment %q: %q", id, got)
			}
		}
	})
}
