package pump_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestContinuationWaitsForItsTurn: a client continues its conversation
// after the listener made its first answer but before the pump accepted
// that answer and ended the turn. The continuation is acknowledged at once
// (journaled, not yet delivered) and held until the first turn completes;
// then it is answered on the same thread — not dead-lettered because the
// first answer ended the thread. Each turn's answer and completion reach
// the outlet that sent the turn, whether the client uses one connection
// or two.
func TestContinuationWaitsForItsTurn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		twoConns bool
		// wantA and wantB are what each connection hears: its turns'
		// answers and completions, in order (one connection: A is B).
		wantA, wantB []string
	}{
		{name: "one connection", wantA: []string{"reply: one answered", "complete (1 waiting)", "reply: two answered", "complete"}},
		{name: "two connections", twoConns: true,
			wantA: []string{"reply: one answered", "complete (1 waiting)"}, wantB: []string{"reply: two answered", "complete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			accepted := make(chan struct{})      // the continuation was acknowledged
			firstAnswered := make(chan struct{}) // the first answer reached its connection
			chat := listenerOf(t, "chat", func(ctx context.Context, in *Bounce, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				wait := accepted
				if in.Text == "two" {
					wait = firstAnswered
				}
				select {
				case <-wait:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return xmlpipe.Respond(&Bounce{Text: in.Text + " answered"}), nil
			})
			j := newMarkJournal()
			p := startPump(t, pump.Options{Journal: j}, chat)
			all := newRecorder()
			defer p.Subscribe(all)()

			outA := newRecorder()
			var once sync.Once
			connA := pump.OutletFunc(func(e pump.Event) {
				outA.Deliver(e)
				if b, ok := e.Payload.(*Bounce); ok && e.Kind == pump.EventReply && b.Text == "one answered" {
					once.Do(func() { close(firstAnswered) })
				}
			})
			outB, connB := outA, pump.Outlet(connA)
			if tc.twoConns {
				outB = newRecorder()
				connB = outB
			}
			alice := pump.Principal{From: "websocket:alice", User: "alice"}
			thread := stage.NewThreadID()
			send := func(text string, out pump.Outlet) {
				t.Helper()
				got, err := p.InjectAs(waitCtx(t), envelope(alice.From, "chat", thread, `<Bounce xmlns=""><Text>`+text+`</Text></Bounce>`),
					out, alice)
				if err != nil || got != thread {
					t.Fatalf("send %s: thread %s, %v (want %s)", text, got, err, thread)
				}
			}
			send("one", connA)
			send("two", connB)
			if journaled, delivered := j.deliveredText("two"); !journaled || delivered {
				t.Errorf("acknowledged continuation: journaled %v, marked delivered %v; want journaled, not delivered yet",
					journaled, delivered)
			}
			close(accepted)

			completes := 1
			if !tc.twoConns {
				completes = 2
			}
			outB.waitN(t, "the continuation's completion", completes, kind(pump.EventComplete))
			outA.waitN(t, "the first turn's completion", 1, kind(pump.EventComplete))
			j.waitDelivered(t, "two")
			if diff := cmp.Diff(tc.wantA, heard(outA.snapshot())); diff != "" {
				t.Errorf("connection A heard (-want +got):\n%s", diff)
			}
			if tc.twoConns {
				if diff := cmp.Diff(tc.wantB, heard(outB.snapshot())); diff != "" {
					t.Errorf("connection B heard (-want +got):\n%s", diff)
				}
			}
			if n := all.count(kind(pump.EventDeadLetter)); n != 0 {
				t.Errorf("%d dead letters: %s", n, describe(all.snapshot()))
			}
		})
	}
}

// heard summarises what a client hears of its turns: answers, failures and
// completions.
func heard(es []pump.Event) []string {
	var out []string
	for _, e := range es {
		switch e.Kind {
		case pump.EventReply:
			text := ""
			if b, ok := e.Payload.(*Bounce); ok {
				text = b.Text
			}
			out = append(out, "reply: "+text)
		case pump.EventComplete:
			c := "complete" + e.Error
			if e.Waiting > 0 {
				c += fmt.Sprintf(" (%d waiting)", e.Waiting)
			}
			out = append(out, c)
		case pump.EventHuh, pump.EventDeadLetter, pump.EventSystemError:
			out = append(out, string(e.Kind)+": "+e.Error)
		}
	}
	return out
}

// TestKillDropsHeldContinuation: Kill stops a conversation together with
// the continuations waiting for its turn in flight: none is handled, each
// sender hears that the conversation was killed, and a held message is
// marked delivered, so no restart brings it back.
func TestKillDropsHeldContinuation(t *testing.T) {
	handled := make(chan string, 4)
	chat := listenerOf(t, "chat", func(ctx context.Context, in *Bounce, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		handled <- in.Text
		<-ctx.Done()
		return nil, ctx.Err()
	})
	j := newMarkJournal()
	p := startPump(t, pump.Options{Journal: j}, chat)
	thread := stage.NewThreadID()
	outA, outB := newRecorder(), newRecorder()
	for _, s := range []struct {
		text string
		out  pump.Outlet
	}{{"one", outA}, {"two", outB}} {
		if _, err := p.InjectWait(waitCtx(t), envelope(client, "chat", thread, `<Bounce xmlns=""><Text>`+s.text+`</Text></Bounce>`), s.out); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-handled; got != "one" {
		t.Fatalf("handled %q first", got)
	}
	if _, err := p.Kill(thread); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		out  *recorder
		want string
	}{{"the turn in flight", outA, "complete" + pump.KilledReason + " (1 waiting)"}, {"the held continuation", outB, "complete" + pump.KilledReason}} {
		name, out := c.name, c.out
		out.waitFor(t, name+"'s completion", kind(pump.EventComplete))
		if diff := cmp.Diff([]string{c.want}, heard(out.snapshot())); diff != "" {
			t.Errorf("%s's sender heard (-want +got):\n%s", name, diff)
		}
	}
	j.waitDelivered(t, "two")
	select {
	case got := <-handled:
		t.Errorf("%q was handled after the kill", got)
	default:
	}
}

// TestAskOnContinues: AskOn continues the conversation of an earlier
// answer on its thread; a thread id that is none is refused, and so is a
// second Ask on a conversation while one waits on it.
func TestAskOnContinues(t *testing.T) {
	release := newGate()
	running := make(chan struct{}, 1)
	chat := listenerOf(t, "chat", func(ctx context.Context, in *Bounce, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "slow" {
			running <- struct{}{}
			release.wait(ctx)
		}
		return xmlpipe.Respond(&Bounce{Text: in.Text + " on " + md.ThreadID}), nil
	})
	p := startPump(t, pump.Options{}, chat)
	t.Cleanup(release.open)
	first, err := p.Ask(waitCtx(t), client, "chat", &Bounce{Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	conv := first.Conversation
	next, err := p.AskOn(waitCtx(t), conv, client, "chat", &Bounce{Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("two on "+conv, next.Payload.(*Bounce).Text); diff != "" || next.Conversation != conv {
		t.Errorf("continuation answered on %s (-want +got):\n%s", next.Conversation, diff)
	}
	if _, err := p.AskOn(waitCtx(t), "not-a-thread", client, "chat", &Bounce{Text: "x"}); !errors.Is(err, pump.ErrBadThread) {
		t.Errorf("AskOn a bad thread: %v, want ErrBadThread", err)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := p.AskOn(waitCtx(t), conv, client, "chat", &Bounce{Text: "slow"})
		slow <- err
	}()
	select {
	case <-running:
	case <-waitCtx(t).Done():
		t.Fatal("the slow turn never ran")
	}
	if _, err := p.AskOn(waitCtx(t), conv, client, "chat", &Bounce{Text: "meanwhile"}); !errors.Is(err, pump.ErrAskPending) {
		t.Errorf("a second AskOn while one waits: %v, want ErrAskPending", err)
	}
	release.open()
	if err := <-slow; err != nil {
		t.Errorf("the waiting AskOn: %v", err)
	}
}
