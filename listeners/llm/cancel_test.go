package llm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// cancelWhile handles the user's text with the agent and cancels the
// handling (cause xmlpipe.ErrCancelled) once at is closed: the turn must
// end with no answer and no error.
func cancelWhile(t *testing.T, r *loopRig, text string, at <-chan struct{}) {
	t.Helper()
	v, _ := stage.NewTextPayload(r.own.GoType(), text)
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
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
	case <-at:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn never reached the point of the cancel")
	}
	cancel(xmlpipe.ErrCancelled)
	select {
	case res := <-done:
		if res.resp != nil || res.err != nil {
			t.Fatalf("cancelled turn returned %#v, %v; want no answer and no error", res.resp, res.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's turn did not end after the cancel")
	}
}

// requestLog is a model that blocks its first request mid-stream (after
// streaming "Let me think") until it is cancelled, and answers the next
// ones from replies, keeping every request.
type requestLog struct {
	mu       sync.Mutex
	requests []Request
	first    func(ctx context.Context, req Request) (Reply, error)
	replies  []Reply
}

// Chat implements Chatter.
func (m *requestLog) Chat(ctx context.Context, req Request) (Reply, error) {
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	if n == 0 {
		return m.first(ctx, req)
	}
	if n-1 >= len(m.replies) {
		return Reply{}, fmt.Errorf("unexpected request %d", n)
	}
	return m.replies[n-1], nil
}

// lastMessages returns the last request's messages, as role: content lines
// (tool calls as their names).
func (m *requestLog) lastMessages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, msg := range m.requests[len(m.requests)-1].Messages {
		if msg.Role == System {
			continue
		}
		line := string(msg.Role) + ": " + msg.Content
		for _, c := range msg.ToolCalls {
			line += " [call " + c.Name + "]"
		}
		out = append(out, line)
	}
	return out
}

// TestCancelledTurnKeepsTheConversation: a turn the user cancels — while
// the model streams its reply, or while a local tool of its calls runs —
// ends with no answer, and the conversation goes on: the next message is
// answered, and the model reads the earlier message, every call it made
// with a result (the one the cancel stopped: "Not made"), and the note that
// the user cancelled that answer; the text streamed before the cancel is
// not kept.
func TestCancelledTurnKeepsTheConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block bool // the first reply calls the note tool, which blocks
		want  []string
	}{
		{name: "while streaming", want: []string{
			"user: write a long poem",
			"user: " + cancelledNote,
			"user: a short one instead",
		}},
		{name: "while a local tool runs", block: true, want: []string{
			"user: write a long poem",
			"assistant:  [call note]",
			"tool: " + notMadeCancelled,
			"user: " + cancelledNote,
			"user: a short one instead",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t)
			r.a.OnDelta = func(string, string, string, bool) {}
			at := make(chan struct{})
			note := &noteTool{block: true, entered: at}
			m := &requestLog{replies: []Reply{{Content: "a short poem"}}}
			m.first = func(ctx context.Context, req Request) (Reply, error) {
				if tc.block {
					return Reply{ToolCalls: []ToolCall{toolCall("c1", "note", `{}`)}}, nil
				}
				req.OnDelta(Delta{Text: "Let me think"})
				close(at)
				<-ctx.Done()
				return Reply{}, fmt.Errorf("openai: %w", ctx.Err())
			}
			r.a.LLM = m
			if tc.block {
				r.a.LocalTools = []LocalTool{note.tool()}
			}
			cancelWhile(t, r, "write a long poem", at)

			if got := answerText(r.deliver("console", "a short one instead", "")); got != "a short poem" {
				t.Fatalf("answer after the cancel %q, want %q", got, "a short poem")
			}
			got := m.lastMessages()
			for i, line := range got {
				// The user's messages are rendered with their sender; keep the text.
				if j := strings.Index(line, "write a long poem"); j > 0 && strings.HasPrefix(line, "user: ") {
					got[i] = "user: write a long poem"
				}
				if j := strings.Index(line, "a short one instead"); j > 0 && strings.HasPrefix(line, "user: ") {
					got[i] = "user: a short one instead"
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the model's request after the cancel (-want +got):\n%s", diff)
			}
		})
	}
}

// messageLines renders a request's messages but the system prompt as
// role: content lines (tool calls as their names), a user's message by its
// text alone.
func messageLines(msgs []Message) []string {
	var out []string
	for _, msg := range msgs {
		if msg.Role == System {
			continue
		}
		content := msg.Content
		if msg.Role == User {
			if _, text, ok := strings.Cut(content, "]\n"); ok && strings.HasPrefix(content, "[From ") {
				content = text
			}
		}
		line := string(msg.Role) + ": " + content
		for _, c := range msg.ToolCalls {
			line += " [call " + c.Name + "]"
		}
		out = append(out, line)
	}
	return out
}

// TestCancelMarkEndsTheWaitForSentCalls: an answer cancelled while the
// agent waits for the calls it sent (to a peer or a tool listener: its
// handler is not running, the pump drops the work that would answer them
// and records its cancel mark) is not waited for: the next message is
// answered, and the model reads each such call as cancelled while it ran,
// and the note that the user cancelled the answer before the new message
// — after a restart too (the mark is a slot of the history). An answer of
// such a call arriving late all the same asks nothing.
func TestCancelMarkEndsTheWaitForSentCalls(t *testing.T) {
	want := []string{
		"user: write a long poem",
		"assistant:  [call calc_v2]",
		"tool: " + cancelledWhileRunning,
		"user: " + cancelledNote,
		"user: a short one instead",
	}
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			r := newLoopRig(t,
				Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"6*7","Precision":0}`)}},
				Reply{Content: "a short poem"})
			if _, ok := r.deliver("console", "write a long poem", "").(*xmlpipe.SendsResponse); !ok {
				t.Fatal("the first turn did not send its call")
			}
			if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
				Raw: []byte("answer cancelled")}); err != nil {
				t.Fatal(err)
			}
			if restart {
				r.restart(nil)
			}
			if got := answerText(r.deliver("console", "a short one instead", "")); got != "a short poem" {
				t.Fatalf("answer after the cancel %q, want %q", got, "a short poem")
			}
			reqs := r.model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			if diff := cmp.Diff(want, messageLines(reqs[1].Messages)); diff != "" {
				t.Errorf("the model's request after the cancel (-want +got):\n%s", diff)
			}
			if resp := r.deliver("calc.v2", `{"Value":"42"}`, "c1"); !isAwait(resp) {
				t.Errorf("a late answer of the cancelled call: %#v, want Await", resp)
			}
			if n := len(r.model.requests()); n != 2 {
				t.Errorf("a late answer of the cancelled call asked the model: %d calls, want 2", n)
			}
		})
	}
}

// TestCancelMarkAfterTheAgentNotedItIsNotRead: a cancel mark that finds no
// call pending (the agent was answering, and noted the cancel itself, or
// had answered) adds nothing to what the model reads.
func TestCancelMarkAfterTheAgentNotedItIsNotRead(t *testing.T) {
	r := newLoopRig(t, Reply{Content: "a poem"}, Reply{Content: "another"})
	if got := answerText(r.deliver("console", "write a poem", "")); got != "a poem" {
		t.Fatalf("first answer %q", got)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", PayloadType: xmlpipe.CancelMarkType,
		Raw: []byte("answer cancelled")}); err != nil {
		t.Fatal(err)
	}
	if got := answerText(r.deliver("console", "again", "")); got != "another" {
		t.Fatalf("second answer %q", got)
	}
	want := []string{"user: write a poem", "assistant: a poem", "user: again"}
	if diff := cmp.Diff(want, messageLines(r.model.requests()[1].Messages)); diff != "" {
		t.Errorf("the model's request (-want +got):\n%s", diff)
	}
}
