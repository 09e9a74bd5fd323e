package llm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// cancelChat is a Chatter from a function, keeping every request.
type cancelChat struct {
	mu   sync.Mutex
	reqs []Request
	fn   func(ctx context.Context, n int, req Request) (Reply, error)
}

// Chat implements Chatter.
func (c *cancelChat) Chat(ctx context.Context, req Request) (Reply, error) {
	c.mu.Lock()
	n := len(c.reqs)
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	return c.fn(ctx, n, req)
}

// TestCancelNoteReadOnce: a cancel that lands as the answer of the agent's
// call is being handled — the pump's mark, recorded first, finds the call
// still without its result, and the handling, cancelled while the model is
// asked, notes the cancel itself — leaves the model one note that the
// user cancelled the answer, not two.
func TestCancelNoteReadOnce(t *testing.T) {
	r := newLoopRig(t)
	asked := make(chan struct{})
	m := &cancelChat{fn: func(ctx context.Context, n int, req Request) (Reply, error) {
		switch n {
		case 0:
			return Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"6*7","Precision":0}`)}}, nil
		case 1: // with the call's result: blocks until the cancel
			close(asked)
			<-ctx.Done()
			return Reply{}, fmt.Errorf("openai: %w", context.Cause(ctx))
		}
		return Reply{Content: "a short poem"}, nil
	}}
	r.a.LLM = m
	if _, ok := r.deliver("console", "write a long poem", "").(*xmlpipe.SendsResponse); !ok {
		t.Fatal("the first turn did not send its call")
	}
	// The call's answer is delivered and handled; while the model is asked,
	// the cancel comes: the pump records its mark, then cancels the
	// handling.
	v, _ := stage.NewTextPayload(r.own.GoType(), `{"Value":"42"}`)
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "calc.v2", To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw, InReplyTo: "c1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: "calc.v2", OwnName: "mathbot",
			InReplyTo: "c1", Peers: r.peers})
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("the answer's handling ended without asking the model: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the answer's handling never asked the model")
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
		Raw: []byte("answer cancelled")}); err != nil {
		t.Fatal(err)
	}
	cancel(xmlpipe.ErrCancelled)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cancelled handling: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled handling did not end")
	}

	if got := answerText(r.deliver("console", "a short one instead", "")); got != "a short poem" {
		t.Fatalf("answer after the cancel %q", got)
	}
	m.mu.Lock()
	last := m.reqs[len(m.reqs)-1]
	m.mu.Unlock()
	notes := 0
	for _, line := range messageLines(last.Messages) {
		if line == "user: "+cancelledNote {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("the model reads the cancel note %d times, want once:\n%q", notes, messageLines(last.Messages))
	}
}

// TestCancelNoteReadOnceWithALocalToolRunning: a step that calls a local
// tool and a peer at once, cancelled while the local tool runs — the
// pump's mark may find the peer's call pending, and the handling notes the
// cancel itself — leaves the model one note, and each call one result.
func TestCancelNoteReadOnceWithALocalToolRunning(t *testing.T) {
	r := newLoopRig(t)
	entered := make(chan struct{})
	note := &noteTool{block: true, entered: entered}
	r.a.LocalTools = []LocalTool{note.tool()}
	m := &cancelChat{fn: func(ctx context.Context, n int, req Request) (Reply, error) {
		if n == 0 {
			return Reply{ToolCalls: []ToolCall{toolCall("c1", "note", `{}`),
				toolCall("c2", "calc_v2", `{"Expression":"6*7","Precision":0}`)}}, nil
		}
		return Reply{Content: "a short poem"}, nil
	}}
	r.a.LLM = m
	v, _ := stage.NewTextPayload(r.own.GoType(), "write a long poem")
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: "t", From: "console", OwnName: "mathbot", Peers: r.peers})
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("the turn ended before its local tool ran: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the local tool never ran")
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
		Raw: []byte("answer cancelled")}); err != nil {
		t.Fatal(err)
	}
	cancel(xmlpipe.ErrCancelled)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cancelled turn: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled turn did not end")
	}
	if got := answerText(r.deliver("console", "a short one instead", "")); got != "a short poem" {
		t.Fatalf("answer after the cancel %q", got)
	}
	m.mu.Lock()
	last := m.reqs[len(m.reqs)-1]
	m.mu.Unlock()
	lines := messageLines(last.Messages)
	notes, calls := 0, 0
	for _, line := range lines {
		switch {
		case line == "user: "+cancelledNote:
			notes++
		case strings.HasPrefix(line, "tool: "):
			calls++
		}
	}
	if notes != 1 || calls != 2 {
		t.Errorf("the model reads %d cancel notes and %d results, want 1 and 2:\n%q", notes, calls, lines)
	}
}
