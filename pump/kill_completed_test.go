package pump_test

import (
	"context"
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestKillCompletedConversation: a conversation that ran its course (fwd
// forwarded to jobs, which ended the chain) has nothing in flight, but its
// root thread stays live for a continuation. Killing it stops nothing, so Kill says so
// (ErrConversationEnded, with the conversation's id) and leaves the
// thread as it was; the conversation can be continued as before. A thread
// nobody ever used is still ErrUnknownThread.
func TestKillCompletedConversation(t *testing.T) {
	pr := newProbe()
	fwd := listenerOf(t, "fwd", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("jobs", &Job{Label: in.Text}), nil
	})
	p := startPump(t, pump.Options{}, fwd, sink[Job](t, "jobs", pr))
	out := newRecorder()
	thread := mustSend(t, p, client, "fwd", &Ping{Text: "first"}, out)
	if c := out.waitFor(t, "completion", kind(pump.EventComplete)); c.Error != "" {
		t.Fatalf("the conversation completed with %q", c.Error)
	}
	if !p.Threads().Known(thread) {
		t.Fatal("precondition: a completed conversation's thread is kept live for its continuation")
	}
	conv, err := p.Kill(thread)
	if !errors.Is(err, pump.ErrConversationEnded) || conv != thread {
		t.Fatalf("Kill(completed) = %q, %v; want %q, %v", conv, err, thread, pump.ErrConversationEnded)
	}
	if !p.Threads().Known(thread) {
		t.Error("killing a completed conversation ended its thread")
	}
	if _, err := p.Kill(stage.NewThreadID()); !errors.Is(err, pump.ErrUnknownThread) {
		t.Errorf("Kill(never used) = %v, want %v", err, pump.ErrUnknownThread)
	}
}

// TestKillEndedConversationWithoutHistory: a conversation whose thread
// ended with it (its only listener ended the chain) is gone from the
// thread registry, and neither an in-memory organism nor a journal without
// thread history remembers it; a kill of it still says it has ended
// (ErrConversationEnded, with its id) — not that the thread is unknown.
func TestKillEndedConversationWithoutHistory(t *testing.T) {
	tests := []struct {
		name string
		opts pump.Options
	}{
		{"no journal", pump.Options{}},
		{"a journal without thread history", pump.Options{Journal: newMarkJournal()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr := newProbe()
			p := startPump(t, tc.opts, sink[Job](t, "jobs", pr))
			out := newRecorder()
			conv := sendJob(t, p, "jobs", "done", out)
			if c := out.waitFor(t, "completion", kind(pump.EventComplete)); c.Error != "" {
				t.Fatalf("the conversation completed with %q", c.Error)
			}
			if p.Threads().Known(conv) {
				t.Fatal("precondition: the conversation's thread ended with it")
			}
			got, err := p.Kill(conv)
			if !errors.Is(err, pump.ErrConversationEnded) || got != conv {
				t.Errorf("Kill(ended) = %q, %v; want %q, %v", got, err, conv, pump.ErrConversationEnded)
			}
			if _, err := p.Kill(stage.NewThreadID()); !errors.Is(err, pump.ErrUnknownThread) {
				t.Errorf("Kill(never used) = %v, want %v", err, pump.ErrUnknownThread)
			}
		})
	}
}

// TestKillEndedInnerThread: a kill that names the thread of an inner hop
// of a conversation that completed (fwd forwarded to jobs, whose handler
// ended its thread) is a kill of that conversation: it has ended
// (ErrConversationEnded, with the conversation's id, not the hop's) — not
// a thread the organism never knew — also when neither an in-memory
// organism nor a journal without thread history remembers the hop.
func TestKillEndedInnerThread(t *testing.T) {
	tests := []struct {
		name string
		opts pump.Options
	}{
		{"no journal", pump.Options{}},
		{"a journal without thread history", pump.Options{Journal: newMarkJournal()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fwd := listenerOf(t, "fwd", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("jobs", &Job{Label: in.Text}), nil
			})
			hop := make(chan string, 1)
			jobs := listenerOf(t, "jobs", func(_ context.Context, _ *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				hop <- md.ThreadID
				return nil, nil
			})
			p := startPump(t, tc.opts, fwd, jobs)
			out := newRecorder()
			conv := mustSend(t, p, client, "fwd", &Ping{Text: "first"}, out)
			if c := out.waitFor(t, "completion", kind(pump.EventComplete)); c.Error != "" {
				t.Fatalf("the conversation completed with %q", c.Error)
			}
			inner := <-hop
			if inner == conv || p.Threads().Known(inner) {
				t.Fatalf("precondition: jobs ran on %s, an inner thread that ended (conversation %s)", inner, conv)
			}
			got, err := p.Kill(inner)
			if !errors.Is(err, pump.ErrConversationEnded) || got != conv {
				t.Errorf("Kill(ended inner thread) = %q, %v; want %q, %v", got, err, conv, pump.ErrConversationEnded)
			}
			if !p.Threads().Known(conv) {
				t.Error("killing a completed conversation by its inner thread ended its root")
			}
			if _, err := p.Kill(stage.NewThreadID()); !errors.Is(err, pump.ErrUnknownThread) {
				t.Errorf("Kill(never used) = %v, want %v", err, pump.ErrUnknownThread)
			}
		})
	}
}

// TestKillEndedInnerThreadOfRunningConversation: a kill naming an inner
// hop's thread that ended while its conversation still runs (fwd sent to
// jobs, which answered and ended its thread, and to slow, still running)
// is a kill of that conversation, as naming its root is: Kill returns the
// conversation's id, slow's call is cancelled with ErrConversationKilled,
// and a message naming the ended thread afterwards is refused as killed
// (ErrContinueKilled) instead of beginning a new conversation under it.
func TestKillEndedInnerThreadOfRunningConversation(t *testing.T) {
	fwd := listenerOf(t, "fwd", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "done" { // jobs' answer
			return nil, nil
		}
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "jobs", Payload: &Job{Label: in.Text}},
			&xmlpipe.SendResponse{To: "slow", Payload: &Pong{Text: in.Text}}), nil
	})
	hop := make(chan string, 1)
	jobs := listenerOf(t, "jobs", func(_ context.Context, _ *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		hop <- md.ThreadID
		return xmlpipe.Respond(&Ping{Text: "done"}), nil
	})
	cause := make(chan error, 1)
	running := make(chan struct{})
	slow := listenerOf(t, "slow", func(ctx context.Context, _ *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		close(running)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	p := startPump(t, pump.Options{}, fwd, jobs, slow)
	ended := make(chan string, 16)
	p.Threads().OnEnd(func(ids []string) {
		for _, id := range ids {
			select {
			case ended <- id:
			default:
			}
		}
	})
	out := newRecorder()
	conv := mustSend(t, p, client, "fwd", &Ping{Text: "first"}, out)
	inner := <-hop
	for id := ""; id != inner; { // jobs answered: its thread ends
		select {
		case id = <-ended:
		case <-waitCtx(t).Done():
			t.Fatal("jobs' thread never ended")
		}
	}
	select { // slow runs: the kill has a call to cancel, not only a queued message
	case <-running:
	case <-waitCtx(t).Done():
		t.Fatal("slow never ran")
	}
	if inner == conv || p.Threads().Known(inner) || !p.Threads().Known(conv) {
		t.Fatalf("precondition: jobs ran on %s, an inner thread that ended, in conversation %s still running", inner, conv)
	}
	if got, err := p.Kill(inner); err != nil || got != conv {
		t.Fatalf("Kill(ended inner thread of a running conversation) = %q, %v; want %q, nil", got, err, conv)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, pump.ErrConversationKilled) {
			t.Errorf("slow's call was cancelled with %v, want %v", err, pump.ErrConversationKilled)
		}
	case <-waitCtx(t).Done():
		t.Fatal("slow's call was never cancelled")
	}
	out.waitFor(t, "the killed conversation's completion", kind(pump.EventComplete))
	if killed, err := p.WasKilled(conv); !killed || err != nil {
		t.Errorf("WasKilled(conversation) = %v, %v; want true", killed, err)
	}
	if p.Threads().Known(conv) {
		t.Error("the killed conversation's root is still live")
	}
	_, err := injectErr(t, p, envelope(client, "jobs", inner, `<Job xmlns=""><Label>again</Label></Job>`), nil)
	if !errors.Is(err, pump.ErrContinueKilled) {
		t.Errorf("continuing on the ended thread the kill named: %v; want ErrContinueKilled", err)
	}
}
