package llm

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestHaltAfterTheModelAnswered: a halt that lands after the model
// answered, before the handler returned (the race of an operator's halt
// with the end of a model call), ends the handling answered fully: the
// step is recorded and the handling settled (xmlpipe.Settle), so the pump
// sends what it returns — the answer, the calls to peers — instead of
// dropping it with the step recorded. The outcome is the same as in a run
// without the halt.
func TestHaltAfterTheModelAnswered(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	callNote := Reply{ToolCalls: []ToolCall{toolCall("n1", "note", `{}`)}}
	cases := []struct {
		name    string
		replies []Reply
		// haltAt is the model call (counted from 1) after whose answer the
		// halt lands.
		haltAt int
	}{
		{name: "answer", replies: []Reply{{Content: "done"}}, haltAt: 1},
		{name: "calls to a peer", replies: []Reply{callPoet}, haltAt: 1},
		{name: "answer after a local step", replies: []Reply{callNote, {Content: "done"}}, haltAt: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(halt bool) (*loopRig, string, bool) {
				t.Helper()
				r := newLoopRig(t, tc.replies...)
				note := &noteTool{}
				r.a.LocalTools = []LocalTool{note.tool()}
				var settling settler
				ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), xmlpipe.SettleKey{}, &settling))
				defer cancel(nil)
				r.a.LLM = ChatterFunc(func(cctx context.Context, req Request) (Reply, error) {
					rep, err := r.model.Chat(cctx, req)
					if halt && len(r.model.requests()) == tc.haltAt {
						cancel(xmlpipe.ErrHalted) // the model answered; the halt lands now
					}
					return rep, err
				})
				resp, err := message("console", "go", "").handle(ctx, r, true)
				if err != nil {
					t.Fatal(err)
				}
				if halt && !errors.Is(context.Cause(ctx), xmlpipe.ErrHalted) {
					t.Fatal("the halt never landed")
				}
				out := answerText(resp)
				if _, ok := resp.(*xmlpipe.SendsResponse); ok {
					out = sentTo(resp)[0]
				}
				return r, out, settling.Settled()
			}
			ref, want, _ := run(false)
			r, got, settled := run(true)
			if got != want || !settled {
				t.Errorf("halted after the model answered: %q, settled %v; want %q, settled", got, settled, want)
			}
			if diff := cmp.Diff(slotKinds(ref.cb), slotKinds(r.cb)); diff != "" {
				t.Errorf("history differs from a run without the halt (-without +with):\n%s", diff)
			}
		})
	}
}
