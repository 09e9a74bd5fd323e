package llm

import (
	"context"
	"fmt"
	"sync"
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

// haltIn handles s with llm as the agent's model and halts it (cause
// xmlpipe.ErrHalted) once at is closed: the handling must end with no
// answer and no error, and not settled.
func haltIn(t *testing.T, r *loopRig, s haltStep, llm Chatter, at <-chan struct{}) {
	t.Helper()
	r.a.LLM = llm
	defer func() { r.a.LLM = r.model }()
	var settling xmlpipe.Settling
	ctx, halt := context.WithCancelCause(xmlpipe.WithSettling(context.Background(), &settling))
	defer halt(nil)
	type result struct {
		resp xmlpipe.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.handle(ctx, r, true)
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
