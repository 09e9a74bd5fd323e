package llm

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestCancelLandingAsTheModelAnswers: a cancel that lands as the model's
// reply arrives — the pump records its mark and cancels the handling, and
// the model call returns its reply all the same — leaves nothing of that
// reply in the conversation: the pump drops what the handling returns, so
// an answer kept would read as given though the user never got it, and
// calls kept would be sent by nobody and waited for (the next message
// answered only once they are abandoned). The next message is answered
// at once, the model reading the user's message, the note that the user
// cancelled, and the new message.
func TestCancelLandingAsTheModelAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply Reply
	}{
		{"an answer", Reply{Content: "never read"}},
		{"calls", Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			m := &cancelChat{fn: func(_ context.Context, n int, _ Request) (Reply, error) {
				if n == 0 {
					// The pump's cancel: its mark, then the handling's
					// context; the reply arrives meanwhile.
					if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
						Raw: []byte("answer cancelled")}); err != nil {
						t.Fatal(err)
					}
					cancel(xmlpipe.ErrCancelled)
					return tc.reply, nil
				}
				return Reply{Content: "a fresh answer"}, nil
			}}
			r.a.LLM = m
			v, _ := stage.NewTextPayload(r.own.GoType(), "write a poem")
			raw, err := r.own.AppendPayload(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot",
				PayloadType: r.own.Name(), Payload: v, Raw: raw}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: "console", OwnName: "mathbot",
				Peers: r.peers}); err != nil {
				t.Fatalf("cancelled handling: %v", err)
			}

			if got := answerText(r.deliver("console", "a short one instead", "")); got != "a fresh answer" {
				t.Fatalf("answer after the cancel %q", got)
			}
			m.mu.Lock()
			last := m.reqs[len(m.reqs)-1]
			m.mu.Unlock()
			want := []string{"user: write a poem", "user: " + cancelledNote, "user: a short one instead"}
			if d := cmp.Diff(want, messageLines(last.Messages)); d != "" {
				t.Errorf("what the model reads after the cancel (-want +got):\n%s", d)
			}
		})
	}
}

// TestCancelLandingAsCallsGoOut: a cancel that lands once the model's calls
// are taken up — a local tool ran, a peer's call is about to go out — ends
// the step: the pump drops the peer's message, so its call gets the result
// that it was not made (none would ever come), and the next message is
// answered at once, the model reading each call with its result and the
// note that the user cancelled.
func TestCancelLandingAsCallsGoOut(t *testing.T) {
	r := newLoopRig(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r.a.LocalTools = []LocalTool{{
		Spec: ToolSpec{Name: "stamp", Description: "Stamps", Parameters: []byte(`{"type":"object"}`)},
		Call: func(context.Context, LocalCall) (LocalResult, error) {
			// The pump's cancel lands as the tool ends: its mark, then the
			// handling's context.
			if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
				Raw: []byte("answer cancelled")}); err != nil {
				t.Fatal(err)
			}
			cancel(xmlpipe.ErrCancelled)
			return LocalResult{Content: "stamped"}, nil
		},
	}}
	m := &cancelChat{fn: func(_ context.Context, n int, _ Request) (Reply, error) {
		if n == 0 {
			return Reply{ToolCalls: []ToolCall{toolCall("c1", "stamp", `{}`), toolCall("c2", "poet", `{"Text":"rain"}`)}}, nil
		}
		return Reply{Content: "a fresh answer"}, nil
	}}
	r.a.LLM = m
	v, _ := stage.NewTextPayload(r.own.GoType(), "write a poem")
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot",
		PayloadType: r.own.Name(), Payload: v, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: "console", OwnName: "mathbot", Peers: r.peers})
	if err != nil {
		t.Fatalf("cancelled handling: %v", err)
	}
	if resp != nil {
		t.Fatalf("the cancelled step answered %T", resp)
	}
	if got := answerText(r.deliver("console", "a short one instead", "")); got != "a fresh answer" {
		t.Fatalf("answer after the cancel %q", got)
	}
	m.mu.Lock()
	last := m.reqs[len(m.reqs)-1]
	m.mu.Unlock()
	want := []string{"user: write a poem", "assistant:  [call stamp] [call poet]", "tool: stamped",
		"tool: " + notMadeCancelled, "user: " + cancelledNote, "user: a short one instead"}
	if d := cmp.Diff(want, messageLines(last.Messages)); d != "" {
		t.Errorf("what the model reads after the cancel (-want +got):\n%s", d)
	}
}
