package llm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// gateTool is a local tool that counts its runs and, while blocking is
// set, signals entered at each run and waits for its context to end,
// failing with its error as a tool does when it is cancelled.
type gateTool struct {
	name     string
	mu       sync.Mutex
	runs     int
	blocking bool
	entered  chan struct{}
}

func newGateTool(name string) *gateTool {
	return &gateTool{name: name, entered: make(chan struct{}, 8)}
}

func (g *gateTool) tool() LocalTool {
	return LocalTool{Spec: ToolSpec{Name: g.name, Description: "Does " + g.name + "."},
		Call: func(ctx context.Context, _ LocalCall) (LocalResult, error) {
			g.mu.Lock()
			g.runs++
			block := g.blocking
			g.mu.Unlock()
			if block {
				g.entered <- struct{}{}
				<-ctx.Done()
				return LocalResult{}, fmt.Errorf("%s: %w", g.name, ctx.Err())
			}
			return LocalResult{Content: g.name + " done"}, nil
		}}
}

func (g *gateTool) block(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.blocking = on
}

func (g *gateTool) runCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs
}

// convoKinds is slotKinds without the steps a halt kept aside, which are
// not part of the conversation the model reads.
func convoKinds(cb *registry.ContextBuffer) []string {
	var out []string
	for _, line := range slotKinds(cb) {
		if !strings.Contains(line, " "+heldStepType+": ") {
			out = append(out, line)
		}
	}
	return out
}

// TestHaltKeepsFinishedLocalTools: a halt that stops one local tool of a
// step after another finished (a note written) does not make the finished
// one run again: after the resume — after a restart in between too, and
// after a second halt of the same step — only the stopped tool runs again,
// the model is not asked again for the step (its requests are those of a
// run without the halt), the conversation reads as without the halt, and
// the same answer goes out.
func TestHaltKeepsFinishedLocalTools(t *testing.T) {
	twoTools := Reply{Content: "Working.", ToolCalls: []ToolCall{toolCall("n1", "note", `{}`), toolCall("s1", "slow", `{}`)}}
	withPeer := Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`), toolCall("s1", "slow", `{}`),
		toolCall("c2", "calc_v2", `{"Expression":"6*7","Precision":0}`)}}
	withBadArgs := Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`), toolCall("s1", "slow", `{}`),
		toolCall("c3", "poet", `{"Text":`)}}
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	cases := []struct {
		name    string
		replies []Reply
		before  []haltStep
		halted  haltStep
		want    string // the answer after the resume ("": the calls are sent)
	}{
		{name: "new message", replies: []Reply{twoTools, {Content: "done"}}, halted: message("console", "go", ""),
			want: "done"},
		{name: "beside a peer's call", replies: []Reply{withPeer, {Content: "42"}}, halted: message("console", "go", "")},
		{name: "beside broken arguments", replies: []Reply{withBadArgs, {Content: "fixed"}},
			halted: message("console", "go", ""), want: "fixed"},
		{name: "call's result", replies: []Reply{callPoet, twoTools, {Content: "a poem"}},
			before: []haltStep{message("console", "go", "")}, halted: message("poet", "drops", "c1"), want: "a poem"},
	}
	modes := []struct {
		name    string
		halts   int
		restart bool // a new agent over the same history before the resume
	}{
		{name: "once", halts: 1},
		{name: "after a restart", halts: 1, restart: true},
		{name: "halted twice", halts: 2},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				run := func(halts int) (*loopRig, *gateTool, *gateTool, xmlpipe.Response) {
					t.Helper()
					r := newLoopRig(t, tc.replies...)
					note, slow := newGateTool("note"), newGateTool("slow")
					r.a.LocalTools = []LocalTool{note.tool(), slow.tool()}
					for _, s := range tc.before {
						if _, err := s.handle(context.Background(), r, true); err != nil {
							t.Fatalf("%s: %v", s.name, err)
						}
					}
					slow.block(true)
					for i := range halts {
						haltHandling(t, r, tc.halted, i == 0, r.model, slow.entered)
					}
					slow.block(false)
					if halts > 0 && mode.restart {
						r.a = r.agent()
						r.a.LocalTools = []LocalTool{note.tool(), slow.tool()}
					}
					resp, err := tc.halted.handle(context.Background(), r, halts == 0)
					if err != nil {
						t.Fatal(err)
					}
					return r, note, slow, resp
				}
				ref, refNote, refSlow, refResp := run(0)
				r, note, slow, resp := run(mode.halts)
				if tc.want != "" {
					if got := answerText(resp); got != tc.want {
						t.Fatalf("answer after the resume %q, want %q", got, tc.want)
					}
				} else if diff := cmp.Diff(sentTo(refResp), sentTo(resp)); diff != "" {
					t.Errorf("response after the resume differs from a run without the halt (-without +with):\n%s", diff)
				}
				if diff := cmp.Diff(readBy(ref.model.requests()), readBy(r.model.requests())); diff != "" {
					t.Errorf("model requests differ from a run without the halt (-without +with):\n%s", diff)
				}
				if diff := cmp.Diff(convoKinds(ref.cb), convoKinds(r.cb)); diff != "" {
					t.Errorf("history differs from a run without the halt (-without +with):\n%s", diff)
				}
				if refNote.runCount() != 1 || note.runCount() != 1 {
					t.Errorf("note ran %d times without the halt and %d with it; want once each (it finished before the halt)",
						refNote.runCount(), note.runCount())
				}
				if refSlow.runCount() != 1 || slow.runCount() != 1+mode.halts {
					t.Errorf("slow ran %d times without the halt and %d with it; want 1 and %d (again after each resume)",
						refSlow.runCount(), slow.runCount(), 1+mode.halts)
				}
			})
		}
	}
}

// TestHaltedStepVoidedByALaterMessage: a step a halt kept aside is the
// halted message's only: when another message of the conversation is
// handled first (the caller's next one), the model is asked anew with it,
// and the kept step is not taken up.
func TestHaltedStepVoidedByALaterMessage(t *testing.T) {
	twoTools := Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`), toolCall("s1", "slow", `{}`)}}
	r := newLoopRig(t, twoTools, Reply{Content: "fresh"})
	note, slow := newGateTool("note"), newGateTool("slow")
	r.a.LocalTools = []LocalTool{note.tool(), slow.tool()}
	slow.block(true)
	haltIn(t, r, message("console", "go", ""), r.model, slow.entered)
	slow.block(false)
	resp, err := message("console", "stop that", "").handle(context.Background(), r, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := answerText(resp); got != "fresh" {
		t.Fatalf("answer %q, want %q", got, "fresh")
	}
	if n := len(r.model.requests()); n != 2 {
		t.Errorf("the model was asked %d times; want 2 (the halted step, then anew with the next message)", n)
	}
	if note.runCount() != 1 || slow.runCount() != 1 {
		t.Errorf("note ran %d times and slow %d; want once each (the kept step is not taken up)",
			note.runCount(), slow.runCount())
	}
}

// TestHaltDuringResentLocalTools: a halt that stops a local tool while the
// agent makes again the calls a crash left unsent (the calls recorded,
// their results not) keeps the results of the tools that finished before
// it: after the resume only the stopped tool runs again.
func TestHaltDuringResentLocalTools(t *testing.T) {
	r := newLoopRig(t, Reply{Content: "done"})
	note, slow := newGateTool("note"), newGateTool("slow")
	r.a.LocalTools = []LocalTool{note.tool(), slow.tool()}
	v, _ := stage.NewTextPayload(r.own.GoType(), "go")
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	cr := callsRecord{Calls: []storedCall{{ID: "n1", Name: "note", Arguments: "{}"}, {ID: "s1", Name: "slow", Arguments: "{}"}}}
	for _, s := range []registry.Slot{
		{ThreadID: "t", From: "console", To: "mathbot", PayloadType: r.own.Name(), Payload: v, Raw: raw},
		{ThreadID: "t", From: "mathbot", OwnName: "mathbot", PayloadType: callsType, Raw: mustJSON(cr)},
	} {
		if _, err := r.cb.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	slow.block(true)
	haltHandling(t, r, message("console", "go", ""), false, r.model, slow.entered)
	slow.block(false)
	resp, err := message("console", "go", "").handle(context.Background(), r, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := answerText(resp); got != "done" {
		t.Fatalf("answer after the resume %q, want %q", got, "done")
	}
	if note.runCount() != 1 || slow.runCount() != 2 {
		t.Errorf("note ran %d times and slow %d; want 1 and 2 (only the stopped tool again)", note.runCount(), slow.runCount())
	}
	if n := len(r.model.requests()); n != 1 {
		t.Errorf("the model was asked %d times; want once, with both results", n)
	}
}
