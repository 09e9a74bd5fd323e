package llm

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestLoopControlTokenSurvivesAHalt: a halt that lands while the model is
// asked after minting its token (the token in its history) leaves the
// AEIOU turn open: handled again after the resume, the model's answer with
// that token decides the turn — here an abort, which must not be ignored
// as a token of a turn that no longer exists and the answer delivered as
// final.
func TestLoopControlTokenSurvivesAHalt(t *testing.T) {
	asked := make(chan struct{})
	var halting bool
	r, _, counters := loopAgent(t, nil, func(n int, req Request) Reply {
		switch n {
		case 0:
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "abort")}}
		case 1:
			halting = true
			return Reply{} // replaced below: the model call the halt aborts
		}
		return Reply{Content: "I must stop: the data is gone.\n" + magicResults(req)[0].Content}
	})
	model := r.a.LLM
	r.a.LLM = ChatterFunc(func(ctx context.Context, req Request) (Reply, error) {
		rep, err := model.Chat(ctx, req)
		if halting {
			halting = false
			close(asked)
			<-ctx.Done()
			return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
		}
		return rep, err
	})
	step := message("console", "go", "")
	ctx, halt := context.WithCancelCause(context.Background())
	defer halt(nil)
	done := make(chan error, 1)
	go func() {
		resp, err := step.handle(ctx, r, true)
		if resp != nil {
			err = fmt.Errorf("halted handling answered %#v", resp)
		}
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		t.Fatal("the model was never asked after the token")
	}
	halt(xmlpipe.ErrHalted)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the halted handling did not end")
	}
	resp, err := step.handle(context.Background(), r, false) // the same message, after the resume
	if err != nil {
		t.Fatal(err)
	}
	if got := answerText(resp); got != "[mathbot halted: aborted by its loop control token: I must stop: the data is gone.]" {
		t.Errorf("answer after the resume %q", got)
	}
	if snap := counters.Snapshot(); snap.Decisions["abort"] != 1 || snap.Failures[aeiou.ReasonWrongNonce] != 0 {
		t.Errorf("counters %+v", snap)
	}
}

// TestLoopControlStaleTokenAskedAgain: a token minted before a restart (the
// keys are fresh at every start) no longer verifies when the halted turn is
// taken up after it; the model is told so and asked again for a new token,
// once, so its abort is not lost as an answer without a valid token.
func TestLoopControlStaleTokenAskedAgain(t *testing.T) {
	asked := make(chan struct{})
	var halting bool
	r, _, _ := loopAgent(t, nil, func(n int, req Request) Reply {
		switch n {
		case 0, 3:
			return Reply{ToolCalls: []ToolCall{magicCall(fmt.Sprintf("m%d", n), "abort")}}
		case 1:
			halting = true
			return Reply{}
		}
		return Reply{Content: "I must stop: the data is gone.\n" + magicResults(req)[0].Content}
	})
	model := r.a.LLM
	r.a.LLM = ChatterFunc(func(ctx context.Context, req Request) (Reply, error) {
		rep, err := model.Chat(ctx, req)
		if halting {
			halting = false
			close(asked)
			<-ctx.Done()
			return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
		}
		return rep, err
	})
	step := message("console", "go", "")
	ctx, halt := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := step.handle(ctx, r, true)
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		t.Fatal("the model was never asked after the token")
	}
	halt(xmlpipe.ErrHalted)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The restart: fresh keys, no session in memory.
	counters := &aeiou.Counters{}
	host, err := aeiou.New(aeiou.Options{Observer: counters, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.a.LoopControl, r.a.loops = host, loopSessions{}
	resp, err := step.handle(context.Background(), r, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := answerText(resp); got != "[mathbot halted: aborted by its loop control token: I must stop: the data is gone.]" {
		t.Errorf("answer after the restart %q", got)
	}
	if snap := counters.Snapshot(); snap.Decisions["abort"] != 1 || snap.Failures[aeiou.ReasonUnknownKey] != 1 {
		t.Errorf("counters %+v", snap)
	}
}
