package llm

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestCancelLandingAsTheReplyIsSaved: a cancel that lands once the model's
// text reply passed the check after the model call — as the reply is about
// to be saved, or just saved — leaves nothing of that reply in the
// conversation: the pump drops what the handling returns, so the reply
// must not read as an answer given. The pump's cancel is its mark in the
// history, then the handling's context; each case lands it at another
// point (replySaveHook), and the next message is answered with the model
// reading the user's message, the note that the user cancelled, and the
// new message — never the dropped reply.
func TestCancelLandingAsTheReplyIsSaved(t *testing.T) {
	for _, tc := range []struct {
		name string
		// mark and cancel land the cancel's two parts when the hook is
		// called with saved false (about to save) or true (just saved).
		markAt, cancelAt string
	}{
		{"before the save", "before", "before"},
		{"mark before, context after the save", "before", "after"},
		{"just after the save", "after", "after"},
		{"mark before the save, context after the handling", "before", "never"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			m := &cancelChat{fn: func(_ context.Context, n int, _ Request) (Reply, error) {
				if n == 0 {
					return Reply{Content: "never read"}, nil
				}
				return Reply{Content: "a fresh answer"}, nil
			}}
			r.a.LLM = m
			first := true
			r.a.replySaveHook = func(saved bool) {
				if !first {
					return
				}
				at := "before"
				if saved {
					at = "after"
				}
				if tc.markAt == at {
					if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
						Raw: []byte("answer cancelled")}); err != nil {
						t.Fatal(err)
					}
				}
				if tc.cancelAt == at {
					cancel(xmlpipe.ErrCancelled)
				}
				if saved {
					first = false
				}
			}
			v, _ := stage.NewTextPayload(r.own.GoType(), "write a poem")
			raw, err := r.own.AppendPayload(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot",
				PayloadType: r.own.Name(), Payload: v, Raw: raw}); err != nil {
				t.Fatal(err)
			}
			resp, err := r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: "console", OwnName: "mathbot",
				Peers: r.peers})
			if err != nil {
				t.Fatalf("cancelled handling: %v", err)
			}
			if tc.cancelAt != "never" && answerText(resp) == "never read" {
				t.Errorf("the cancelled handling answered %q", answerText(resp))
			}
			first = false

			if got := answerText(r.deliver("console", "a short one instead", "")); got != "a fresh answer" {
				t.Fatalf("answer after the cancel %q", got)
			}
			m.mu.Lock()
			last := m.reqs[len(m.reqs)-1]
			m.mu.Unlock()
			want := []string{"user: write a poem", "user: " + cancelledNote, "user: a short one instead"}
			if tc.cancelAt == "never" {
				// The handling ended unaware: no note of its own; the
				// reply after the pump's mark is not read all the same.
				want = []string{"user: write a poem", "user: a short one instead"}
			}
			if d := cmp.Diff(want, messageLines(last.Messages)); d != "" {
				t.Errorf("what the model reads after the cancel (-want +got):\n%s", d)
			}
		})
	}
}
