package llm

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// haltStep is one message a halt test hands the agent: handle runs it (the
// pump's part: a message's slot is recorded once, before its first
// handling; a halted handling is run again as it was).
type haltStep struct {
	name   string
	handle func(ctx context.Context, r *loopRig, first bool) (xmlpipe.Response, error)
}

// message is a step delivering text from from (bound to the call ref, if
// any), as the pump does.
func message(from, text, ref string) haltStep {
	return haltStep{name: from + ":" + text, handle: func(ctx context.Context, r *loopRig, first bool) (xmlpipe.Response, error) {
		v, _ := stage.NewTextPayload(r.own.GoType(), text)
		if first {
			raw, err := r.own.AppendPayload(nil, v)
			if err != nil {
				return nil, err
			}
			if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: from, To: "mathbot", PayloadType: r.own.Name(),
				Payload: v, Raw: raw, InReplyTo: ref}); err != nil {
				return nil, err
			}
		}
		return r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: from, OwnName: "mathbot", InReplyTo: ref,
			Peers: r.peers})
	}}
}

// recordError records in thread t's history a <huh> from core to the
// agent, about the call ref ("": about no call), as the pump records every
// error it delivers before the agent's HandleError runs.
func recordError(t testing.TB, cb *registry.ContextBuffer, ref string) {
	t.Helper()
	recordErrorFrom(t, cb, "core", "huh", ref)
}

// recordErrorFrom is recordError for an error of kind (huh, SystemError)
// from from (core, system).
func recordErrorFrom(t testing.TB, cb *registry.ContextBuffer, from, kind, ref string) {
	t.Helper()
	if _, err := cb.Append(registry.Slot{ThreadID: "t", From: from, To: "mathbot", PayloadType: kind,
		Raw: []byte("<" + kind + "/>"), InReplyTo: ref}); err != nil {
		t.Fatal(err)
	}
}

// refusal is a step delivering the pump's refusal of the agent's answer.
func refusal() haltStep {
	return haltStep{name: "refusal", handle: func(ctx context.Context, r *loopRig, first bool) (xmlpipe.Response, error) {
		if first {
			recordError(r.t, r.cb, "")
		}
		de := &xmlpipe.DeliveryError{Huh: &xmlpipe.Huh{Error: failure.HuhPayload}, Detail: "Element 'X': not expected"}
		return r.a.HandleError(ctx, de, xmlpipe.Metadata{ThreadID: "t", From: "core", OwnName: "mathbot", Peers: r.peers})
	}}
}

// TestHaltLeavesNoTrace: an operator's halt while the model is asked holds
// the agent's turn: it sends no answer, logs that the halt holds the turn
// (never "agent halted", which reads as the agent's failure), records
// nothing, and the message handled again after the resume is handled as if
// it were handled then for the first time — the model gets the same request
// as in a run without the halt, and the same answer goes out.
func TestHaltLeavesNoTrace(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	cases := []struct {
		name    string
		replies []Reply
		before  []haltStep // handled as usual
		halted  haltStep   // halted while the model is asked, then handled again
		want    string     // the answer after the resume
	}{
		{name: "new message", replies: []Reply{{Content: "done"}},
			halted: message("console", "go", ""), want: "done"},
		{name: "call's result", replies: []Reply{callPoet, {Content: "a poem"}},
			before: []haltStep{message("console", "go", "")}, halted: message("poet", "drops", "c1"), want: "a poem"},
		{name: "refused answer", replies: []Reply{{Content: "first"}, {Content: "second"}},
			before: []haltStep{message("console", "go", "")}, halted: refusal(), want: "second"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(halt bool) (*loopRig, string) {
				t.Helper()
				r := newLoopRig(t, tc.replies...)
				var logs bytes.Buffer
				r.a.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				for _, s := range tc.before {
					if _, err := s.handle(context.Background(), r, true); err != nil {
						t.Fatalf("%s: %v", s.name, err)
					}
				}
				if halt {
					haltWhileAsked(t, r, tc.halted)
				}
				resp, err := tc.halted.handle(context.Background(), r, !halt)
				if err != nil {
					t.Fatal(err)
				}
				if got := answerText(resp); got != tc.want {
					t.Fatalf("answer after the resume %q, want %q", got, tc.want)
				}
				return r, logs.String()
			}
			ref, _ := run(false)
			r, logs := run(true)
			if diff := cmp.Diff(readBy(ref.model.requests()), readBy(r.model.requests())); diff != "" {
				t.Errorf("model requests differ from a run without the halt (-without +with):\n%s", diff)
			}
			if diff := cmp.Diff(slotKinds(ref.cb), slotKinds(r.cb)); diff != "" {
				t.Errorf("history differs from a run without the halt (-without +with):\n%s", diff)
			}
			if strings.Contains(logs, "agent halted") || !strings.Contains(logs, "held by the halt") {
				t.Errorf("log of a halted turn:\n%s", logs)
			}
		})
	}
}

// haltWhileAsked handles s with a model that blocks until the handling's
// context is cancelled, and halts it (cause xmlpipe.ErrHalted) once the
// model is asked: the handling must end with no answer and no error.
func haltWhileAsked(t *testing.T, r *loopRig, s haltStep) {
	t.Helper()
	asked := make(chan struct{})
	r.a.LLM = ChatterFunc(func(ctx context.Context, _ Request) (Reply, error) {
		close(asked)
		<-ctx.Done()
		return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
	})
	defer func() { r.a.LLM = r.model }()
	ctx, halt := context.WithCancelCause(context.Background())
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
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never asked")
	}
	halt(xmlpipe.ErrHalted)
	select {
	case res := <-done:
		if res.resp != nil || res.err != nil {
			t.Errorf("halted handling returned %#v, %v; want no answer and no error", res.resp, res.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the halted handling did not end")
	}
}

// modelView is what the model reads of a request.
type modelView struct {
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// readBy is what the model reads of each request.
func readBy(reqs []Request) []modelView {
	out := make([]modelView, len(reqs))
	for i, r := range reqs {
		out[i] = modelView{Messages: r.Messages, Tools: r.Tools, MaxTokens: r.MaxTokens}
	}
	return out
}

// slotKinds lists the history of thread t as "from>to type: raw" lines.
func slotKinds(cb *registry.ContextBuffer) []string {
	tc, ok := cb.Thread("t")
	if !ok {
		return nil
	}
	var out []string
	for _, s := range tc.Slots() {
		out = append(out, fmt.Sprintf("%s>%s %s: %s", s.From, s.To, s.PayloadType, s.Raw))
	}
	return out
}

// TestHaltedStreamSaysItWasCut: text a halted model call streamed before
// the halt is ended with a note that the reply was cut by the halt and
// comes again after the resume — not left as if it were the reply.
func TestHaltedStreamSaysItWasCut(t *testing.T) {
	r := newLoopRig(t, Reply{Content: "Let me think. Done."})
	var mu sync.Mutex
	var shown []string
	r.a.OnDelta = func(_, _, text string, end bool) {
		mu.Lock()
		defer mu.Unlock()
		shown = append(shown, fmt.Sprintf("%q end=%v", text, end))
	}
	asked := make(chan struct{})
	r.a.LLM = ChatterFunc(func(ctx context.Context, req Request) (Reply, error) {
		req.OnDelta(Delta{Text: "Let me think"})
		close(asked)
		<-ctx.Done()
		return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
	})
	ctx, halt := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := message("console", "go", "").handle(ctx, r, true)
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never asked")
	}
	halt(xmlpipe.ErrHalted)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the halted handling did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`"Let me think" end=false`, fmt.Sprintf("%q end=true", haltedStreamNote), `"" end=true`}
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("streamed (-want +got):\n%s", diff)
	}
}
