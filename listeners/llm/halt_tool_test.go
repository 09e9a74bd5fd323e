package llm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// noteTool is a local tool "note" that counts its runs and, while block is
// set, signals entered and waits for its context to end, failing with its
// error as a tool does when it is cancelled.
type noteTool struct {
	mu      sync.Mutex
	runs    int
	block   bool
	entered chan struct{}
	once    sync.Once
}

func (n *noteTool) tool() LocalTool {
	return LocalTool{Spec: ToolSpec{Name: "note", Description: "Notes a thing."},
		Call: func(ctx context.Context, _ LocalCall) (LocalResult, error) {
			n.mu.Lock()
			n.runs++
			block := n.block
			n.mu.Unlock()
			if block {
				n.once.Do(func() { close(n.entered) })
				<-ctx.Done()
				return LocalResult{}, fmt.Errorf("note: %w", ctx.Err())
			}
			return LocalResult{Content: "noted"}, nil
		}}
}

func (n *noteTool) runCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runs
}

// settler records what the agent says by xmlpipe.Settle, as the pump's
// handling does.
type settler struct{ v atomic.Bool }

// Settle is xmlpipe.Settle's method.
func (s *settler) Settle(settled bool) { s.v.Store(settled) }

// Settled reports the last Settle.
func (s *settler) Settled() bool { return s.v.Load() }

// haltIn handles s with llm as the agent's model and halts it (cause
// xmlpipe.ErrHalted) once at is closed: the handling must end with no
// answer and no error, and not settled.
func haltIn(t *testing.T, r *loopRig, s haltStep, llm Chatter, at <-chan struct{}) {
	t.Helper()
	haltHandling(t, r, s, true, llm, at)
}

// haltHandling is haltIn for a handling of s that is its first (first: the
// rig records its message, as the pump does) or one after a resume.
func haltHandling(t *testing.T, r *loopRig, s haltStep, first bool, llm Chatter, at <-chan struct{}) {
	t.Helper()
	r.a.LLM = llm
	defer func() { r.a.LLM = r.model }()
	var settling settler
	ctx, halt := context.WithCancelCause(context.WithValue(context.Background(), xmlpipe.SettleKey{}, &settling))
	defer halt(nil)
	type result struct {
		resp xmlpipe.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.handle(ctx, r, first)
		done <- result{resp, err}
	}()
	select {
	case <-at:
	case <-time.After(30 * time.Second):
		t.Fatal("the handling never reached the point of the halt")
	}
	halt(xmlpipe.ErrHalted)
	select {
	case res := <-done:
		if res.resp != nil || res.err != nil || settling.Settled() {
			t.Errorf("halted handling returned %#v, %v, settled %v; want no answer, no error, not settled",
				res.resp, res.err, settling.Settled())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the halted handling did not end")
	}
}

// TestHaltDuringLocalToolLeavesNoTrace: an operator's halt while a local
// tool of the agent runs (the route tool's filler, the memory tools, …)
// holds the turn like a halt during the model call: no failure of the tool
// is recorded for the model to read, nothing is answered, and after the
// resume the step is taken up: the model, whose reply is known, is not
// asked again — it gets the same requests as in a run without the halt —,
// the stopped tool runs again, and the same answer goes out.
func TestHaltDuringLocalToolLeavesNoTrace(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	callNote := Reply{Content: "Noting.", ToolCalls: []ToolCall{toolCall("n1", "note", `{}`),
		toolCall("c2", "calc_v2", `{"Expression":"6*7","Precision":0}`)}}
	callNoteOnly := Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`)}}
	cases := []struct {
		name    string
		replies []Reply
		before  []haltStep
		halted  haltStep
		want    string // the answer after the resume ("": the calls are sent)
	}{
		{name: "new message", replies: []Reply{callNoteOnly, {Content: "done"}}, halted: message("console", "go", ""),
			want: "done"},
		{name: "beside a peer's call", replies: []Reply{callNote, {Content: "42"}}, halted: message("console", "go", "")},
		{name: "call's result", replies: []Reply{callPoet, callNoteOnly, {Content: "a poem"}},
			before: []haltStep{message("console", "go", "")}, halted: message("poet", "drops", "c1"),
			want: "a poem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(halt bool) (*loopRig, *noteTool, xmlpipe.Response) {
				t.Helper()
				r := newLoopRig(t, tc.replies...)
				note := &noteTool{entered: make(chan struct{})}
				r.a.LocalTools = []LocalTool{note.tool()}
				for _, s := range tc.before {
					if _, err := s.handle(context.Background(), r, true); err != nil {
						t.Fatalf("%s: %v", s.name, err)
					}
				}
				if halt {
					note.block = true
					haltIn(t, r, tc.halted, r.model, note.entered)
					note.block = false
				}
				resp, err := tc.halted.handle(context.Background(), r, !halt)
				if err != nil {
					t.Fatal(err)
				}
				return r, note, resp
			}
			ref, refNote, refResp := run(false)
			r, note, resp := run(true)
			if tc.want != "" {
				if got := answerText(resp); got != tc.want {
					t.Fatalf("answer after the resume %q, want %q", got, tc.want)
				}
			} else if diff := cmp.Diff(sentTo(refResp), sentTo(resp)); diff != "" {
				t.Errorf("response after the resume differs from a run without the halt (-without +with):\n%s", diff)
			}
			if diff := cmp.Diff(convoKinds(ref.cb), convoKinds(r.cb)); diff != "" {
				t.Errorf("history differs from a run without the halt (-without +with):\n%s", diff)
			}
			if diff := cmp.Diff(readBy(ref.model.requests()), readBy(r.model.requests())); diff != "" {
				t.Errorf("model requests differ from a run without the halt (-without +with):\n%s", diff)
			}
			if refNote.runCount() != 1 || note.runCount() != 2 {
				t.Errorf("note ran %d times without the halt and %d with it; want 1 and 2 (run again after the resume)",
					refNote.runCount(), note.runCount())
			}
			for _, line := range convoKinds(r.cb) {
				if strings.Contains(line, "failed") || strings.Contains(line, "canceled") {
					t.Errorf("the halt left a trace: %s", line)
				}
			}
		})
	}
}

// TestHaltAfterALocalStepAsksTheModel: a halt during the model call that
// follows a step the handling finished (a local tool's call answered) keeps
// that step: the message handled again after the resume asks the model with
// it — a peer's answer handled again is not taken for a repeated one and
// ignored, nor an error's note recorded twice.
func TestHaltAfterALocalStepAsksTheModel(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	callNote := Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`)}}
	cases := []struct {
		name    string
		replies []Reply
		before  []haltStep
		halted  haltStep
		want    string
	}{
		{name: "call's result", replies: []Reply{callPoet, callNote, {Content: "a poem"}},
			before: []haltStep{message("console", "go", "")}, halted: message("poet", "drops", "c1"), want: "a poem"},
		{name: "refused answer", replies: []Reply{{Content: "first"}, callNote, {Content: "second"}},
			before: []haltStep{message("console", "go", "")}, halted: refusal(), want: "second"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(halt bool) (*loopRig, *noteTool, string) {
				t.Helper()
				r := newLoopRig(t, tc.replies...)
				note := &noteTool{}
				r.a.LocalTools = []LocalTool{note.tool()}
				for _, s := range tc.before {
					if _, err := s.handle(context.Background(), r, true); err != nil {
						t.Fatalf("%s: %v", s.name, err)
					}
				}
				if halt {
					// The step goes through the rig's model; the model call
					// after it blocks and is halted.
					asked := make(chan struct{})
					var once sync.Once
					haltIn(t, r, tc.halted, ChatterFunc(func(ctx context.Context, req Request) (Reply, error) {
						if len(r.model.requests()) < len(tc.before)+1 {
							return r.model.Chat(ctx, req)
						}
						once.Do(func() { close(asked) })
						<-ctx.Done()
						return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
					}), asked)
				}
				resp, err := tc.halted.handle(context.Background(), r, !halt)
				if err != nil {
					t.Fatal(err)
				}
				return r, note, answerText(resp)
			}
			ref, _, _ := run(false)
			r, note, got := run(true)
			if got != tc.want {
				t.Fatalf("answer after the resume %q, want %q", got, tc.want)
			}
			if diff := cmp.Diff(slotKinds(ref.cb), slotKinds(r.cb)); diff != "" {
				t.Errorf("history differs from a run without the halt (-without +with):\n%s", diff)
			}
			if note.runCount() != 1 {
				t.Errorf("note ran %d times; want once (its step finished before the halt)", note.runCount())
			}
		})
	}
}

// sentTo lists the messages a response sends as "to ref" lines.
func sentTo(resp xmlpipe.Response) []string {
	sends, ok := resp.(*xmlpipe.SendsResponse)
	if !ok {
		return []string{fmt.Sprintf("not a SendAll: %T", resp)}
	}
	var out []string
	for _, s := range sends.Sends {
		out = append(out, s.To+" "+s.Ref)
	}
	return out
}
