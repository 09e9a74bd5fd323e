package console_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// lateSend is an in-process backend whose Send of the line text returns
// only once that line's conversation completed and the session wrote all
// it was told before: the schedule where the console's goroutine loses
// the processor right after Send while the agent answers at once.
type lateSend struct {
	*organism.Local
	t    *testing.T
	text string
	out  *transcript
	// armed is the conversation whose next completion Send waits for;
	// shown is closed once it was told to the session and a marker after it.
	armed atomic.Pointer[string]
	shown chan struct{}
	once  sync.Once
}

// lateMarker is the line lateSend has the session say after the
// completion it waits for: once it is written, so is everything before.
const lateMarker = "[late] the completion was told"

// Subscribe implements organism.Feed: fn is told, after the armed
// conversation's completion, a marker line.
func (b *lateSend) Subscribe(fn func(organism.Output)) func() {
	return b.Local.Subscribe(func(o organism.Output) {
		// Armed before this completion was told: one told earlier (the
		// cancelled turn's) is not the line's.
		armed := b.armed.Load()
		fn(o)
		if o.Kind == organism.OutputComplete && armed != nil && *armed == o.Conversation {
			b.once.Do(func() {
				fn(organism.Output{Kind: organism.OutputPrint, From: "late", Text: "the completion was told"})
				close(b.shown)
			})
		}
	})
}

// Send implements organism.Sender.
func (b *lateSend) Send(ctx context.Context, m organism.Message) (string, error) {
	if m.Text != b.text {
		return b.Local.Send(ctx, m)
	}
	b.armed.Store(&m.Thread)
	conv, err := b.Local.Send(ctx, m)
	if err != nil {
		return conv, err
	}
	select {
	case <-b.shown:
	case <-time.After(cancelWait):
		b.t.Errorf("the line %q did not complete within %v", m.Text, cancelWait)
		return conv, nil
	}
	for deadline := time.Now().Add(cancelWait); !strings.Contains(b.out.String(), lateMarker); {
		if time.Now().After(deadline) {
			b.t.Errorf("the session did not write %q within %v", lateMarker, cancelWait)
			break
		}
		time.Sleep(time.Millisecond)
	}
	return conv, nil
}

// TestConsoleLineAfterCancelAnsweredBeforeItsWait: a piped session whose
// first line outlasted its line wait (the tool it called still ran), then
// cancelled, continues the conversation with a line answered before the
// session begins to wait for it (Send returns late). The session must
// still end at /quit with the answer — not wait out reply_timeout for a
// completion it already saw, taken by the cancelled turn's earlier one.
// This is what made TestConsoleCancelWhileAToolRuns hang, rarely, on a
// loaded machine.
func TestConsoleLineAfterCancelAnsweredBeforeItsWait(t *testing.T) {
	r := startToolRun(t)
	b := &lateSend{Local: r.l, t: t, text: "never mind", shown: make(chan struct{})}
	// A short line wait: the first line is still running when it passes
	// (as the default's 10s pass before the /cancel of the flaky test).
	write, done, out := r.session(t, b, console.Config{LineWait: time.Millisecond, ReplyTimeout: time.Minute})
	b.out = out
	write("@poet count slowly\n")
	await(t, "run_command got the agent's call", r.running)
	write("/cancel\n")
	await(t, "the conversation completed cancelled", r.cancelled)
	write("@poet never mind\n/quit\n")
	r.ended(t, done, out)
	if i, j := strings.Index(out.String(), "[poet] a short answer"), strings.Index(out.String(), lateMarker); i < 0 || j < i {
		t.Errorf("the answer was not written before the marker that follows its completion:\n%s", out.String())
	}
}
