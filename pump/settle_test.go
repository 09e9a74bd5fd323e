package pump_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestHaltOfASettledHandling: a halt that reaches an agent's handling after
// the handler settled it (xmlpipe.Settle: it recorded the step its answer
// carries) does not drop the answer: the sender gets it at once and the
// message is not handled again after the resume. A handling that
// unsettles before the halt is held as ever: no answer, handled again.
func TestHaltOfASettledHandling(t *testing.T) {
	for _, settled := range []bool{true, false} {
		t.Run(map[bool]string{true: "settled", false: "unsettled"}[settled], func(t *testing.T) {
			running := make(chan struct{})
			var (
				mu    sync.Mutex
				calls int
			)
			thinker := agent(listenerOf(t, "thinker", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n > 1 {
					return xmlpipe.Respond(&Ping{Text: "again " + in.Label}), nil
				}
				// The model answered; the halt lands while the answer is
				// recorded, before the handler returns.
				xmlpipe.Settle(ctx, true)
				xmlpipe.Settle(ctx, settled)
				close(running)
				<-ctx.Done()
				return xmlpipe.Respond(&Ping{Text: "answered " + in.Label}), nil
			}))
			p := startPump(t, pump.Options{}, thinker)
			out := newRecorder()
			mustSend(t, p, client, "thinker", &Job{Label: "deep"}, out)
			select {
			case <-running:
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not start")
			}
			if rep, err := p.Halt(pump.HaltAgents); err != nil || rep.Cancelled != 1 {
				t.Fatalf("Halt = %+v, %v; want 1 cancelled", rep, err)
			}
			if settled {
				if r := out.waitFor(t, "the settled handling's answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != "answered deep" {
					t.Errorf("answer %+v, want the settled handling's", r.Payload)
				}
				poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
				if q := queueDepth(p, "thinker"); q != 0 {
					t.Errorf("the settled message waits in the queue (%d) to be handled again", q)
				}
			} else {
				poll(t, "the interrupted message back in the queue", func() bool { return queueDepth(p, "thinker") == 1 })
			}
			if !p.Unhalt() {
				t.Fatal("Unhalt: no halt in force")
			}
			if !settled {
				if r := out.waitFor(t, "the answer after the resume", kind(pump.EventReply)); r.Payload.(*Ping).Text != "again deep" {
					t.Errorf("answer %+v, want the one after the resume", r.Payload)
				}
			}
			poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
			mu.Lock()
			defer mu.Unlock()
			if want := map[bool]int{true: 1, false: 2}[settled]; calls != want {
				t.Errorf("handler called %d times, want %d", calls, want)
			}
			if n := out.count(kind(pump.EventReply)); n != 1 {
				t.Errorf("%d answers, want 1", n)
			}
		})
	}
}

// TestHaltOfASettledSlowHandling: a handling the handler settled
// (xmlpipe.Settle) before a halt reached it, and whose handler ignores the
// cancellation for longer than CancelGrace, is still concluded by its
// response: the pump frees its slot and its worker at the grace, as for
// any handler it gives up on, but the settled answer is sent once the
// handler returns — once, and the message is not handled again after the
// resume. Whether the resume comes before the handler returns or after;
// and a kill of its conversation meanwhile drops the answer as ever.
func TestHaltOfASettledSlowHandling(t *testing.T) {
	cases := []struct {
		name        string
		resumeFirst bool
		kill        bool
	}{
		{name: "returns while halted"},
		{name: "returns after the resume", resumeFirst: true},
		{name: "killed meanwhile", kill: true},
	}
	for _, tc := range cases {
		resumeFirst := tc.resumeFirst
		t.Run(tc.name, func(t *testing.T) {
			running := make(chan struct{})
			release := newGate()
			t.Cleanup(release.open)
			returned := make(chan struct{})
			var (
				mu    sync.Mutex
				calls int
			)
			thinker := agent(listenerOf(t, "thinker", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n > 1 {
					return xmlpipe.Respond(&Ping{Text: "again " + in.Label}), nil
				}
				xmlpipe.Settle(ctx, true) // the answer is recorded: it must go out
				close(running)
				<-ctx.Done()
				release.wait(t.Context()) // slower than the grace
				defer close(returned)
				return xmlpipe.Respond(&Ping{Text: "answered " + in.Label}), nil
			}))
			thinker.Workers = 1
			p := startPump(t, pump.Options{CancelGrace: 20 * time.Millisecond}, thinker)
			out := newRecorder()
			thread := mustSend(t, p, client, "thinker", &Job{Label: "deep"}, out)
			select {
			case <-running:
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not start")
			}
			if rep, err := p.Halt(pump.HaltAgents); err != nil || rep.Cancelled != 1 {
				t.Fatalf("Halt = %+v, %v; want 1 cancelled", rep, err)
			}
			poll(t, "the handler given up on after the grace", func() bool { return p.Stats().Abandoned == 1 })
			if tc.kill {
				if _, err := p.Kill(thread); err != nil {
					t.Fatal(err)
				}
				release.open()
				<-returned
				if !p.Unhalt() {
					t.Fatal("Unhalt: no halt in force")
				}
				poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
				if n := out.count(kind(pump.EventReply)); n != 0 {
					t.Errorf("the killed conversation got %d answers", n)
				}
				mu.Lock()
				defer mu.Unlock()
				if calls != 1 {
					t.Errorf("handler called %d times, want once", calls)
				}
				return
			}
			if resumeFirst && !p.Unhalt() {
				t.Fatal("Unhalt: no halt in force")
			}
			release.open()
			<-returned
			if r := out.waitFor(t, "the settled handling's answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != "answered deep" {
				t.Errorf("answer %+v, want the settled handling's", r.Payload)
			}
			if !resumeFirst && !p.Unhalt() {
				t.Fatal("Unhalt: no halt in force")
			}
			poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
			poll(t, "no handler lingers", func() bool { return listenerInfo(t, p, "thinker").Lingering == 0 })
			if q := queueDepth(p, "thinker"); q != 0 {
				t.Errorf("the settled message waits in the queue (%d) to be handled again", q)
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != 1 {
				t.Errorf("handler called %d times, want once", calls)
			}
			if n := out.count(kind(pump.EventReply)); n != 1 {
				t.Errorf("%d answers, want 1", n)
			}
		})
	}
}
