package llm

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestKilledStreamingTurnSaysKilled: a kill of the conversation while the
// model streams its reply ends the agent's turn without an answer (nobody
// takes one any more) and the log says the conversation was killed — not
// "agent halted", which reads as a fault of the agent or an operator's halt.
func TestKilledStreamingTurnSaysKilled(t *testing.T) {
	r := newLoopRig(t)
	var logs bytes.Buffer
	r.a.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	streaming := make(chan struct{})
	r.a.OnDelta = func(string, string, string, bool) {}
	r.a.LLM = ChatterFunc(func(ctx context.Context, req Request) (Reply, error) {
		req.OnDelta(Delta{Text: "Let me think"})
		close(streaming)
		<-ctx.Done()
		return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
	})
	ctx, kill := context.WithCancelCause(context.Background())
	v, _ := stage.NewTextPayload(r.own.GoType(), "think hard")
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp xmlpipe.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: "console", OwnName: "mathbot", Peers: r.peers})
		done <- result{resp, err}
	}()
	select {
	case <-streaming:
	case <-time.After(30 * time.Second):
		t.Fatal("the model never streamed")
	}
	kill(xmlpipe.ErrConversationKilled)
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's turn did not end after the kill")
	}
	if res.err != nil || res.resp != nil {
		t.Errorf("killed turn returned %#v, %v; want no answer and no error", res.resp, res.err)
	}
	out := logs.String()
	if strings.Contains(out, "agent halted") || !strings.Contains(out, "conversation killed") {
		t.Errorf("log of a killed turn:\n%s", out)
	}
}
