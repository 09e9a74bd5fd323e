package pump_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ended is what a handler saw when its context ended.
type ended struct {
	label string
	err   error // ctx.Err()
	cause error // context.Cause(ctx)
}

// endOf reports ctx's end as seen by the handler of label.
func endOf(ctx context.Context, label string) ended {
	return ended{label: label, err: ctx.Err(), cause: context.Cause(ctx)}
}

// waitEnded receives one ended report.
func waitEnded(t *testing.T, ch <-chan ended) ended {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a handler's context to end")
		return ended{}
	}
}

// poll waits until cond holds (checked every millisecond), or fails.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKillCancelsRunningHandlers: Kill cancels the context of every running
// handler call of the conversation — on its sub-threads too, whichever of
// its threads is named — with cause ErrConversationKilled; what they answer
// afterwards is dropped as a dead letter, the sender gets no <huh>, and the
// handlers of another conversation keep running.
func TestKillCancelsRunningHandlers(t *testing.T) {
	tests := []struct {
		name string
		// kill picks the thread Kill names from the conversation id and the
		// threads the handlers run on.
		kill func(conv string, threads []string) string
	}{
		{"by conversation id", func(conv string, _ []string) string { return conv }},
		{"by a sub-thread", func(_ string, threads []string) string { return threads[1] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := newGate()
			ends := make(chan ended, 8)
			threads := make(chan string, 8)
			pr := newProbe()
			// A broadcast group: one message without <to> runs both members
			// at once, each on its own sub-thread of the conversation.
			member := func(name string) pump.Listener {
				l := listenerOf(t, name, func(ctx context.Context, in *News, md xmlpipe.Metadata) (xmlpipe.Response, error) {
					threads <- md.ThreadID
					select {
					case <-ctx.Done():
						ends <- endOf(ctx, in.Headline)
					case <-release.ch:
					case <-t.Context().Done():
					}
					return xmlpipe.Send("pings", &Ping{Text: in.Headline + " from " + name}), nil
				})
				l.Broadcast = true
				return l
			}
			p := startPump(t, pump.Options{}, member("n1"), member("n2"), sink[Ping](t, "pings", pr))
			all := newRecorder()
			p.Subscribe(all)
			doomedOut, otherOut := newRecorder(), newRecorder()
			doomed, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<News xmlns=""><Headline>doomed</Headline></News>`), doomedOut)
			if err != nil {
				t.Fatal(err)
			}
			var doomedThreads []string
			for range 2 {
				doomedThreads = append(doomedThreads, <-threads)
			}
			if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<News xmlns=""><Headline>other</Headline></News>`), otherOut); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				<-threads
			}
			for _, th := range doomedThreads {
				if th == doomed {
					t.Fatalf("broadcast member ran on the conversation's root thread %s, want a sub-thread", th)
				}
			}
			conv, err := p.Kill(tc.kill(doomed, doomedThreads))
			if err != nil || conv != doomed {
				t.Fatalf("Kill = %s, %v; want %s", conv, err, doomed)
			}
			for range 2 {
				e := waitEnded(t, ends)
				if e.label != "doomed" || !errors.Is(e.err, context.Canceled) || !errors.Is(e.cause, pump.ErrConversationKilled) {
					t.Fatalf("handler end %+v, want the doomed conversation's, cancelled with ErrConversationKilled", e)
				}
			}
			doomedOut.waitFor(t, "the killed conversation's completion", kind(pump.EventComplete))
			all.waitN(t, "both answers dropped", 2, func(e pump.Event) bool {
				return e.Kind == pump.EventDeadLetter && e.Conversation == doomed &&
					e.Error == "conversation killed: the handler's answer is dropped"
			})
			if n := doomedOut.count(kind(pump.EventHuh)); n != 0 {
				t.Errorf("the killed conversation's sender got %d <huh>, want none", n)
			}
			select {
			case e := <-ends:
				t.Fatalf("another conversation's handler was cancelled: %+v", e)
			default:
			}
			release.open()
			otherOut.waitFor(t, "the other conversation's completion", kind(pump.EventComplete))
			for _, c := range pr.all() {
				if strings.HasPrefix(c.Payload.(*Ping).Text, "doomed") {
					t.Errorf("the killed conversation's answer reached pings: %+v", c.Payload)
				}
			}
			if n := len(pr.all()); n != 2 {
				t.Errorf("pings got %d answers, want the other conversation's 2", n)
			}
		})
	}
}

// TestHandlerTimeout: a listener's timeout cancels its handler's context
// (with a cause naming the listener and the duration), whatever the handler answers afterwards is discarded, the
// sender gets the usual <huh>, and the journal and the listener's last error
// say which timeout fired.
func TestHandlerTimeout(t *testing.T) {
	tests := []struct {
		name   string
		answer func(context.Context) (xmlpipe.Response, error)
	}{
		{"handler returns the context's error", func(ctx context.Context) (xmlpipe.Response, error) { return nil, ctx.Err() }},
		{"handler answers after the deadline", func(context.Context) (xmlpipe.Response, error) {
			return xmlpipe.Respond(&Ping{Text: "too late"}), nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ends := make(chan ended, 1)
			slow := listenerOf(t, "slow", func(ctx context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				<-ctx.Done()
				ends <- endOf(ctx, in.Label)
				return tc.answer(ctx)
			})
			slow.Timeout = 100 * time.Millisecond
			j := newMarkJournal()
			p := startPump(t, pump.Options{Journal: j}, slow)
			out := newRecorder()
			start := time.Now()
			mustSend(t, p, client, "slow", &Job{Label: "x"}, out)
			e := waitEnded(t, ends)
			if waited := time.Since(start); waited < 100*time.Millisecond {
				t.Errorf("the timeout fired after %s, before 100ms", waited)
			}
			const want = "listener slow: handler timeout 100ms"
			if !errors.Is(e.err, context.Canceled) || !errors.Is(e.cause, pump.ErrHandlerTimeout) || e.cause.Error() != want {
				t.Fatalf("handler end %+v, want cancelled with cause %q", e, want)
			}
			huh := out.waitFor(t, "the sender's <huh>", kind(pump.EventHuh))
			if huh.Error != failure.HuhProcessing || !strings.Contains(strings.Join(huh.Diagnostics, " "), want) {
				t.Errorf("<huh> %q %v, want the canned text and a diagnostic naming the timeout", huh.Error, huh.Diagnostics)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if n := out.count(kind(pump.EventReply)); n != 0 {
				t.Errorf("%d replies reached the sender after the timeout, want none", n)
			}
			if li := listenerInfo(t, p, "slow"); !strings.Contains(li.LastError, want) || li.Timeout != 100*time.Millisecond {
				t.Errorf("listener info: last error %q, timeout %s", li.LastError, li.Timeout)
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			found := false
			for _, r := range j.records {
				for _, d := range r.Diagnostics {
					found = found || r.Kind == pump.RecordHuh && strings.Contains(d.Msg, want)
				}
			}
			if !found {
				t.Errorf("no <huh> record in the journal names %q", want)
			}
		})
	}
}

// TestDefaultTimeouts: a listener without a Timeout gets the pump's default
// for its kind; a negative one has none.
func TestDefaultTimeouts(t *testing.T) {
	mk := func(name string, agent, remote bool, timeout time.Duration) pump.Listener {
		l := sink[Job](t, name, newProbe())
		l.Payload = payloadType[Job](t)
		l.Agent, l.Remote, l.Timeout = agent, remote, timeout
		return l
	}
	ls := []pump.Listener{mk("tool", false, false, 0), mk("agent", true, false, 0), mk("remote", false, true, 0),
		mk("own", false, false, 3*time.Second), mk("none", false, false, -1)}
	for i := range ls {
		ls[i].Broadcast = true
	}
	ls[1] = sink[Ping](t, "agent", newProbe()) // an agent never shares a root tag
	ls[1].Agent = true
	tests := []struct {
		name string
		opts pump.Options
		want map[string]time.Duration
	}{
		{"defaults", pump.Options{}, map[string]time.Duration{"tool": pump.DefaultHandlerTimeout,
			"agent": pump.DefaultAgentTimeout, "remote": 0, "own": 3 * time.Second, "none": 0}},
		{"options", pump.Options{HandlerTimeout: time.Minute * 2, AgentTimeout: time.Hour}, map[string]time.Duration{
			"tool": 2 * time.Minute, "agent": time.Hour, "remote": 0, "own": 3 * time.Second, "none": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPump(t, tc.opts, ls...)
			for name, want := range tc.want {
				if got := listenerInfo(t, p, name).Timeout; got != want {
					t.Errorf("%s: timeout %s, want %s", name, got, want)
				}
			}
		})
	}
}

// TestAbandonStuckHandler: a handler that ignores its cancelled context is
// abandoned after CancelGrace: the sender gets its <huh>, a new worker takes
// the stuck one's place (the single-worker listener keeps answering), and
// when the stuck handler finally returns, its answer goes nowhere.
func TestAbandonStuckHandler(t *testing.T) {
	stuck := newGate()
	t.Cleanup(stuck.open)
	returned := make(chan struct{})
	l := listenerOf(t, "worker", func(ctx context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Label == "stuck" {
			stuck.wait(t.Context()) // ignores ctx, like a read of a FIFO nobody writes
			defer close(returned)
			return xmlpipe.Respond(&Ping{Text: "from the stuck handler"}), nil
		}
		return xmlpipe.Respond(&Ping{Text: "ok"}), nil
	})
	l.Workers, l.Timeout = 1, 50*time.Millisecond
	p := startPump(t, pump.Options{CancelGrace: 50 * time.Millisecond}, l)
	stuckOut := newRecorder()
	mustSend(t, p, client, "worker", &Job{Label: "stuck"}, stuckOut)
	stuckOut.waitFor(t, "the stuck call's <huh>", kind(pump.EventHuh))
	stuckOut.waitFor(t, "the stuck call's conversation completes", kind(pump.EventComplete))
	if got := p.Stats().Abandoned; got != 1 {
		t.Errorf("Stats().Abandoned = %d, want 1", got)
	}
	if li := listenerInfo(t, p, "worker"); li.Lingering != 1 || li.Active != 0 || li.SlotsHeld != 0 {
		t.Errorf("while the handler is stuck: lingering %d, active %d, slots held %d; want 1, 0, 0", li.Lingering, li.Active, li.SlotsHeld)
	}
	okOut := newRecorder()
	mustSend(t, p, client, "worker", &Job{Label: "next"}, okOut)
	if r := okOut.waitFor(t, "the next answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != "ok" {
		t.Errorf("reply %+v", r.Payload)
	}
	stuck.open()
	<-returned
	poll(t, "the abandoned handler to be counted as returned", func() bool { return listenerInfo(t, p, "worker").Lingering == 0 })
	if n := stuckOut.count(kind(pump.EventReply)); n != 0 {
		t.Errorf("the abandoned handler's answer reached its sender (%d replies)", n)
	}
	poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
}

// TestHaltAndUnhalt: Halt(HaltAgents) cancels the running agent's handler
// with cause ErrHalted and holds the agents' queued messages while other
// listeners keep serving; Unhalt hands them over again — the interrupted
// message is handled anew, its history appended once. HaltAll halts
// everything, a narrower Halt never narrows it, and listeners added while
// halted start halted.
func TestHaltAndUnhalt(t *testing.T) {
	ends := make(chan ended, 4)
	// deepRunning is closed once the deep call's handler runs: its call is
	// published (startCall) before the handler is entered, so Halt finds
	// it. Active counts the message a step earlier, before it is.
	deepRunning := make(chan struct{})
	var (
		mu      sync.Mutex
		calls   = map[string]int{}
		history = map[string]int{} // Job slots in the thread's history at the last call
		p       *pump.Pump
	)
	thinker := agent(listenerOf(t, "thinker", func(ctx context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		jobs := 0
		if tc, ok := p.Context().Thread(md.ThreadID); ok {
			for _, s := range tc.Slots() {
				if s.PayloadType == "Job" {
					jobs++
				}
			}
		}
		mu.Lock()
		calls[in.Label]++
		n := calls[in.Label]
		history[in.Label] = jobs
		mu.Unlock()
		if in.Label == "deep" && n == 1 {
			close(deepRunning)
			<-ctx.Done() // a model call in progress
			ends <- endOf(ctx, in.Label)
			return xmlpipe.Respond(&Ping{Text: "discarded"}), nil
		}
		return xmlpipe.Respond(&Ping{Text: "thought " + in.Label}), nil
	}))
	calc := listenerOf(t, "calc", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Ping{Text: "calc " + in.Text}), nil
	})
	p = startPump(t, pump.Options{}, thinker, calc)
	deepOut := newRecorder()
	mustSend(t, p, client, "thinker", &Job{Label: "deep"}, deepOut)
	select {
	case <-deepRunning:
	case <-time.After(30 * time.Second):
		t.Fatal("the deep call did not start")
	}

	rep, err := p.Halt(pump.HaltAgents)
	if err != nil || rep.Scope != pump.HaltAgents || rep.Cancelled != 1 {
		t.Fatalf("Halt = %+v, %v; want scope agents, 1 cancelled", rep, err)
	}
	if e := waitEnded(t, ends); !errors.Is(e.err, context.Canceled) || !errors.Is(e.cause, pump.ErrHalted) {
		t.Fatalf("the agent's handler ended with %+v, want cause ErrHalted", e)
	}
	poll(t, "the interrupted message back in the queue", func() bool { return queueDepth(p, "thinker") == 1 })
	if scope, ok := p.Halted(); !ok || scope != pump.HaltAgents {
		t.Errorf("Halted() = %v, %v", scope, ok)
	}
	if !listenerInfo(t, p, "thinker").Halted || listenerInfo(t, p, "calc").Halted {
		t.Error("introspection: want thinker halted, calc not")
	}
	calcOut := newRecorder()
	mustSend(t, p, client, "calc", &Ping{Text: "1+1"}, calcOut)
	calcOut.waitFor(t, "calc answers while the agents are halted", kind(pump.EventReply))
	laterOut := newRecorder()
	mustSend(t, p, client, "thinker", &Job{Label: "later"}, laterOut)
	if q := queueDepth(p, "thinker"); q != 2 {
		t.Fatalf("thinker queue %d while halted, want 2 (held)", q)
	}
	if n := deepOut.count(kind(pump.EventReply)) + deepOut.count(kind(pump.EventHuh)); n != 0 {
		t.Fatalf("the interrupted call answered its sender (%d events)", n)
	}

	// HaltAll widens it; a narrower Halt keeps it.
	if rep, err := p.Halt(pump.HaltAll); err != nil || rep.Scope != pump.HaltAll || rep.Held != 2 {
		t.Fatalf("Halt(HaltAll) = %+v, %v", rep, err)
	}
	if rep, _ := p.Halt(pump.HaltAgents); rep.Scope != pump.HaltAll {
		t.Fatalf("a narrower Halt narrowed the scope to %v", rep.Scope)
	}
	if _, err := p.Halt(pump.HaltScope(9)); !errors.Is(err, pump.ErrBadHaltScope) {
		t.Errorf("Halt(9) = %v, want ErrBadHaltScope", err)
	}
	if err := p.AddListener(sink[Pong](t, "late", newProbe())); err != nil {
		t.Fatal(err)
	}
	if !listenerInfo(t, p, "calc").Halted || !listenerInfo(t, p, "late").Halted {
		t.Error("under HaltAll, calc and a listener added since must be halted")
	}
	if err := p.Pause("calc"); err != nil {
		t.Fatal(err)
	}

	if !p.Unhalt() || p.Unhalt() {
		t.Fatal("Unhalt: want true once, then false")
	}
	if r := deepOut.waitFor(t, "the interrupted message's answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != "thought deep" {
		t.Errorf("deep answered %+v", r.Payload)
	}
	laterOut.waitFor(t, "the held message's answer", kind(pump.EventReply))
	mu.Lock()
	if calls["deep"] != 2 || calls["later"] != 1 {
		t.Errorf("handler calls %v, want deep twice (interrupted, then again) and later once", calls)
	}
	if history["deep"] != 1 {
		t.Errorf("the interrupted message is %d times in its thread's history when handled again, want once", history["deep"])
	}
	mu.Unlock()
	if !listenerInfo(t, p, "calc").Paused {
		t.Error("Unhalt resumed a paused listener")
	}
	if err := p.Resume("calc"); err != nil {
		t.Fatal(err)
	}
}

// TestHaltLiftedByShutdown: Shutdown drains halted listeners (nothing queued
// is lost), and Halt after it fails with ErrClosed.
func TestHaltLiftedByShutdown(t *testing.T) {
	pr := newProbe()
	p := newPump(t, pump.Options{}, sink[Job](t, "jobs", pr))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Halt(pump.HaltAll); err != nil {
		t.Fatal(err)
	}
	sendJob(t, p, "jobs", "held", nil)
	if err := p.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if c := pr.all(); len(c) != 1 {
		t.Fatalf("handled during shutdown: %+v, want the held job", c)
	}
	if _, err := p.Halt(pump.HaltAll); !errors.Is(err, pump.ErrClosed) {
		t.Errorf("Halt after Shutdown = %v, want ErrClosed", err)
	}
}

// TestHaltLeavesCallsWaitingOnConversations: a halt stops the queue of a
// listener marked WaitsOnConversations, not its running calls — they wait
// on work the halt stops where it runs — and such a call, answered after
// Unhalt, ends as ever.
func TestHaltLeavesCallsWaitingOnConversations(t *testing.T) {
	running, release := make(chan struct{}), make(chan struct{})
	started := sync.OnceFunc(func() { close(running) })
	var cancelled atomic.Bool
	waiter := listenerOf(t, "waiter", func(ctx context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		started()
		select {
		case <-release:
		case <-ctx.Done():
			cancelled.Store(true)
			return nil, ctx.Err()
		}
		return xmlpipe.Respond(&Ping{Text: "waited " + in.Text}), nil
	})
	waiter.WaitsOnConversations = true
	p := startPump(t, pump.Options{}, waiter)
	out := newRecorder()
	mustSend(t, p, client, "waiter", &Ping{Text: "x"}, out)
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not start")
	}
	rep, err := p.Halt(pump.HaltAll)
	if err != nil || rep.Cancelled != 0 {
		t.Fatalf("Halt = %+v, %v; want no call cancelled", rep, err)
	}
	if !listenerInfo(t, p, "waiter").Halted {
		t.Error("the listener's queue is not halted")
	}
	p.Unhalt()
	close(release)
	if r := out.waitFor(t, "the call's answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != "waited x" {
		t.Errorf("answered %+v", r.Payload)
	}
	if cancelled.Load() {
		t.Error("the halt cancelled the call")
	}
}
