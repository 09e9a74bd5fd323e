package pump_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
	"go.uber.org/goleak"
)

// TestShutdownDrains: Shutdown waits for in-flight work — a slow handler
// finishes and its output is still delivered — then returns; a second
// Shutdown is a no-op and Inject afterwards fails with ErrClosed (reference
// Q28 fixed: shutdown neither hangs nor drops queued work).
func TestShutdownDrains(t *testing.T) {
	entered, finish := newGate(), newGate()
	var mu sync.Mutex
	var steps []string
	step := func(s string) { mu.Lock(); steps = append(steps, s); mu.Unlock() }
	slow := listenerOf(t, "slow", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == "next" {
			step("slow got the answer")
			return xmlpipe.Respond(&Ping{Text: "delivered: " + in.Label}), nil
		}
		entered.open()
		finish.wait(t.Context())
		step("handler returned")
		return xmlpipe.Send("next", &Ping{Text: "after the slow part"}), nil
	})
	next := listenerOf(t, "next", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		step("next handled")
		return xmlpipe.Respond(&Job{Label: in.Text}), nil
	})
	// MaxInFlight 1: while slow runs, a further Inject waits for room (as
	// long as the test allows); Shutdown turns it away at once, which tells
	// the test the drain has begun.
	p := startPump(t, pump.Options{MaxInFlight: 1, AdmitWait: waitTimeout}, slow, next)
	out := newRecorder()
	mustSend(t, p, client, "slow", &Job{Label: "work"}, out)
	entered.wait(waitCtx(t))
	waiting := make(chan error, 1)
	go func() {
		waiting <- p.Inject(waitCtx(t), envelope(client, "slow", stage.NewThreadID(), `<Job xmlns=""><Label>w</Label></Job>`), out)
	}()

	shut := make(chan error, 1)
	go func() {
		shut <- p.Shutdown(context.Background())
		step("shutdown returned")
	}()
	select {
	case err := <-waiting:
		if !errors.Is(err, pump.ErrClosed) {
			t.Fatalf("Inject waiting for room during Shutdown = %v, want ErrClosed", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Shutdown did not turn away an Inject waiting for room")
	}
	finish.open()
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Shutdown did not return after the work drained")
	}
	// Everything below was delivered before Shutdown returned: no waiting.
	if got := out.count(kind(pump.EventReply)); got != 1 {
		t.Fatalf("replies delivered before Shutdown returned: %d, want 1; events: %s", got, describe(out.snapshot()))
	}
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	if r := reply.Payload.(*Ping); r.Text != "delivered: after the slow part" {
		t.Errorf("reply %q", r.Text)
	}
	if got := p.InFlight(); got != 0 {
		t.Errorf("InFlight after Shutdown: %d", got)
	}
	mu.Lock()
	if len(steps) < 3 || steps[0] != "handler returned" || steps[1] != "next handled" || steps[2] != "slow got the answer" {
		t.Errorf("steps %v: the slow handler and its follow-up must finish before Shutdown returns", steps)
	}
	mu.Unlock()

	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	ctx := waitCtx(t)
	if err := p.Inject(ctx, envelope(client, "slow", stage.NewThreadID(), `<Job xmlns=""><Label>late</Label></Job>`), out); !errors.Is(err, pump.ErrClosed) {
		t.Errorf("Inject after Shutdown = %v, want ErrClosed", err)
	}
	if _, err := p.Send(ctx, client, "slow", &Job{Label: "late"}, out); !errors.Is(err, pump.ErrClosed) {
		t.Errorf("Send after Shutdown = %v, want ErrClosed", err)
	}
	if _, err := p.SendSystem("slow", &Job{Label: "late"}); !errors.Is(err, pump.ErrClosed) {
		t.Errorf("SendSystem after Shutdown = %v, want ErrClosed", err)
	}
}

// TestShutdownDeadline: Shutdown bounded by an expiring deadline still waits
// for running handlers to return, and reports the deadline when it gave up the
// drain first; the late output is delivered (queued before the drain gave up)
// or dead-lettered (after), never lost silently.
func TestShutdownDeadline(t *testing.T) {
	entered, finish := newGate(), newGate()
	returned := make(chan struct{})
	slow := listenerOf(t, "slow", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered.open()
		finish.wait(t.Context())
		close(returned)
		return xmlpipe.Respond(&Job{Label: "late"}), nil
	})
	p := startPump(t, pump.Options{}, slow)
	events := newRecorder()
	p.Subscribe(events)
	mustSend(t, p, client, "slow", &Job{}, newRecorder())
	entered.wait(waitCtx(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- p.Shutdown(ctx) }()
	<-ctx.Done()
	finish.open()
	select {
	case err := <-shut:
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want nil or a DeadlineExceeded error", err)
		}
		select {
		case <-returned:
		default:
			t.Error("Shutdown returned while a handler was still running")
		}
	case <-time.After(waitTimeout):
		t.Fatal("Shutdown did not return")
	}
	events.waitFor(t, "the late output delivered or dead-lettered", func(e pump.Event) bool {
		return e.Kind == pump.EventReply || e.Kind == pump.EventDeadLetter && e.From == "slow"
	})
}

// TestLifecycleErrors: Inject before Start and Start twice are errors.
func TestLifecycleErrors(t *testing.T) {
	p := newPump(t, pump.Options{}, sink[Job](t, "s", newProbe()))
	if err := p.Inject(context.Background(), []byte("<x/>"), nil); !errors.Is(err, pump.ErrNotStarted) {
		t.Errorf("Inject before Start = %v, want ErrNotStarted", err)
	}
	if _, err := p.SendSystem("s", &Job{}); !errors.Is(err, pump.ErrNotStarted) {
		t.Errorf("SendSystem before Start = %v, want ErrNotStarted", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	if err := p.Start(); !errors.Is(err, pump.ErrStarted) {
		t.Errorf("second Start = %v, want ErrStarted", err)
	}
	if _, err := pump.New(pump.Options{Scheduling: "random"}); err == nil {
		t.Error("New accepted an unknown scheduling policy")
	}
}

// markJournal is a SeqJournal and DeliveryJournal that keeps which messages
// were journaled and which were marked delivered.
type markJournal struct {
	mu        sync.Mutex
	seq       int64
	messages  map[string]int64 // payload text → seq of its message record
	delivered map[int64]bool
	records   []pump.Record
}

func newMarkJournal() *markJournal {
	return &markJournal{messages: map[string]int64{}, delivered: map[int64]bool{}}
}

func (j *markJournal) Record(r pump.Record) { j.RecordSeq(r) }

func (j *markJournal) RecordSeq(r pump.Record) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.records = append(j.records, r)
	if r.Kind == pump.RecordMessage {
		j.messages[string(r.Envelope)] = j.seq
	}
	return j.seq
}

func (j *markJournal) Delivered(seq int64) {
	j.mu.Lock()
	j.delivered[seq] = true
	j.mu.Unlock()
}

// deliveredText reports, for the journaled message holding text, whether it
// was marked delivered (and false, false when no such message was journaled).
func (j *markJournal) deliveredText(text string) (journaled, delivered bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for env, seq := range j.messages {
		if strings.Contains(env, ">"+text+"<") {
			return true, j.delivered[seq]
		}
	}
	return false, false
}

// waitDelivered waits until the journaled message holding text is marked
// delivered: a handler's call is seen inside the handler, its mark only once
// the pump has finished the handling (outputs journaled) after it returned.
func (j *markJournal) waitDelivered(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if _, delivered := j.deliveredText(text); delivered {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not marked delivered within %v", text, waitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// kinds counts the journal's records by kind.
func (j *markJournal) kinds() map[pump.RecordKind]int {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[pump.RecordKind]int{}
	for _, r := range j.records {
		out[r.Kind]++
	}
	return out
}

// TestShutdownNow: an immediate shutdown cancels the running handler's
// context (cause ErrShutdown), handles nothing that was queued, and marks none of those
// messages delivered (Recover re-delivers them on the next start), while a
// message whose handling finished before stays marked; nothing is answered
// or dead-lettered.
func TestShutdownNow(t *testing.T) {
	j := newMarkJournal()
	pr := newProbe()
	entered := make(chan string, 4)
	cancelled := make(chan error, 1)
	slow := listenerOf(t, "slow", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered <- in.Label
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return xmlpipe.Send("done", &Ping{Text: "never"}), nil
	})
	slow.Workers = 1
	p := startPump(t, pump.Options{Journal: j}, slow, sink[Ping](t, "done", pr))
	mustSend(t, p, client, "done", &Ping{Text: "before"}, nil)
	pr.next(t)
	// Handled before means finished, not only entered: a handling that
	// ShutdownNow cuts short between the handler's return and the pump's
	// finishing it is dropped, outputs and all, and re-delivered on the
	// next start like the others (finish, drop).
	j.waitDelivered(t, "before")
	mustSend(t, p, client, "slow", &Job{Label: "running"}, nil)
	if got := <-entered; got != "running" {
		t.Fatalf("entered %q", got)
	}
	mustSend(t, p, client, "slow", &Job{Label: "queued1"}, nil)
	mustSend(t, p, client, "slow", &Job{Label: "queued2"}, nil)
	before := j.kinds()

	if err := p.ShutdownNow(waitCtx(t)); err != nil {
		t.Fatalf("ShutdownNow: %v", err)
	}
	if err := <-cancelled; !errors.Is(err, pump.ErrShutdown) {
		t.Fatalf("the running handler's context ended with cause %v, want ErrShutdown", err)
	}
	if len(entered) != 0 {
		t.Fatalf("a queued message was handled: %q", <-entered)
	}
	if calls := pr.all(); len(calls) != 1 {
		t.Fatalf("%d sink calls, want only the one before the shutdown", len(calls))
	}
	tests := []struct {
		text      string
		delivered bool
	}{{"before", true}, {"running", false}, {"queued1", false}, {"queued2", false}}
	for _, tc := range tests {
		journaled, delivered := j.deliveredText(tc.text)
		if !journaled || delivered != tc.delivered {
			t.Errorf("%s: journaled %v, delivered %v; want journaled, delivered %v", tc.text, journaled, delivered, tc.delivered)
		}
	}
	if diff := cmp.Diff(before, j.kinds()); diff != "" {
		t.Errorf("journal records written by the immediate shutdown (-before +after):\n%s", diff)
	}
	if _, err := p.Send(waitCtx(t), client, "done", &Ping{Text: "after"}, nil); !errors.Is(err, pump.ErrClosed) {
		t.Errorf("Send after ShutdownNow: %v, want ErrClosed", err)
	}
}

// TestShutdownNowBounded: a handler that ignores its cancelled context
// makes ShutdownNow return ctx's error instead of waiting for it.
func TestShutdownNowBounded(t *testing.T) {
	g := newGate()
	entered := make(chan struct{}, 1)
	stuck := listenerOf(t, "stuck", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered <- struct{}{}
		g.wait(t.Context())
		return nil, nil
	})
	p := startPump(t, pump.Options{}, stuck)
	t.Cleanup(g.open)
	mustSend(t, p, client, "stuck", &Job{}, nil)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.ShutdownNow(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 handlers still running") {
		t.Fatalf("ShutdownNow = %v, want DeadlineExceeded naming the running handler", err)
	}
}

// TestShutdownNowDuringGracefulShutdown: an immediate shutdown cuts a
// graceful one short: the drain stops waiting for the blocked handler.
func TestShutdownNowDuringGracefulShutdown(t *testing.T) {
	entered := make(chan struct{}, 1)
	slow := listenerOf(t, "slow", func(ctx context.Context, _ *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	p := startPump(t, pump.Options{ShutdownTimeout: time.Hour}, slow)
	mustSend(t, p, client, "slow", &Job{}, nil)
	<-entered
	graceful := make(chan error, 1)
	go func() { graceful <- p.Shutdown(context.Background()) }()
	ctx := waitCtx(t)
	for !errors.Is(p.Inject(ctx, []byte("<x/>"), nil), pump.ErrClosed) { // the graceful shutdown began
		if ctx.Err() != nil {
			t.Fatal("the graceful Shutdown never began")
		}
		runtime.Gosched()
	}
	if err := p.ShutdownNow(waitCtx(t)); err != nil {
		t.Fatalf("ShutdownNow: %v", err)
	}
	select {
	case err := <-graceful:
		if err != nil {
			t.Fatalf("graceful Shutdown: %v", err)
		}
	case <-waitCtx(t).Done():
		t.Fatal("the graceful Shutdown kept draining after ShutdownNow")
	}
}

// TestStartAfterShutdown: a pump shut down — before it started, or after —
// refuses to start with ErrClosed and starts no worker (a worker started
// then would never be stopped: a second Shutdown is a no-op). Concurrent
// Start and Shutdown leave either nothing running or a pump that stops.
func TestStartAfterShutdown(t *testing.T) {
	ping := listenerOf(t, "ping", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(in), nil
	})
	tests := []struct {
		name          string
		startedBefore bool
	}{
		{"never started", false},
		{"started and shut down", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			p := newPump(t, pump.Options{}, ping)
			if tt.startedBefore {
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Shutdown(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
			if err := p.Start(); !errors.Is(err, pump.ErrClosed) {
				t.Fatalf("Start after Shutdown: %v, want ErrClosed", err)
			}
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		for range 20 {
			p := newPump(t, pump.Options{}, ping)
			started := make(chan error, 1)
			go func() { started <- p.Start() }()
			if err := p.Shutdown(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
			if err := <-started; err != nil && !errors.Is(err, pump.ErrClosed) {
				t.Fatalf("Start: %v", err)
			}
			if err := p.Shutdown(waitCtx(t)); err != nil { // what Start began, if anything, stops
				t.Fatal(err)
			}
		}
	})
}

// TestShutdownWhileShuttingDown: a Shutdown while another drains does not
// return as if the pump had stopped (its caller would close what the
// drain still uses): it waits for the drain, bounded by its own ctx, and
// a later one returns nil once the pump stopped.
func TestShutdownWhileShuttingDown(t *testing.T) {
	entered, finish := newGate(), newGate()
	slow := listenerOf(t, "slow", func(_ context.Context, _ *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered.open()
		finish.wait(t.Context())
		return nil, nil
	})
	p := newPump(t, pump.Options{ShutdownTimeout: time.Hour}, slow)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	mustSend(t, p, client, "slow", &Job{}, nil)
	entered.wait(waitCtx(t))
	graceful := make(chan error, 1)
	go func() { graceful <- p.Shutdown(context.Background()) }()
	ctx := waitCtx(t)
	for !errors.Is(p.Inject(ctx, []byte("<x/>"), nil), pump.ErrClosed) { // the graceful shutdown began
		if ctx.Err() != nil {
			t.Fatal("the graceful Shutdown never began")
		}
		runtime.Gosched()
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Shutdown(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown during the drain = %v, want context.Canceled (the drain is not over)", err)
	}
	finish.open()
	if err := <-graceful; err != nil {
		t.Fatalf("graceful Shutdown: %v", err)
	}
	if err := p.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown after the drain: %v", err)
	}
}

// TestGracefulShutdownKeepsTheHalt: a graceful shutdown of a halted pump
// whose journal re-delivers does not run what the halt holds — the
// messages waiting at halted listeners stay journaled and undelivered, for
// the next start (which starts halted) — while the listeners the halt
// leaves serving drain as ever. Without such a journal the halt is lifted
// and everything drains (TestHaltLiftedByShutdown).
func TestGracefulShutdownKeepsTheHalt(t *testing.T) {
	j := newMarkJournal()
	pr := newProbe()
	agent := sink[Job](t, "agent", pr)
	agent.Agent = true
	p := startPump(t, pump.Options{Journal: j}, agent, sink[Ping](t, "tool", pr))
	if _, err := p.Halt(pump.HaltAgents); err != nil {
		t.Fatal(err)
	}
	mustSend(t, p, client, "agent", &Job{Label: "held"}, nil)
	mustSend(t, p, client, "tool", &Ping{Text: "served"}, nil)
	if err := p.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var handled []string
	for _, c := range pr.all() {
		handled = append(handled, c.Listener)
	}
	if diff := cmp.Diff([]string{"tool"}, handled); diff != "" {
		t.Errorf("handled during the shutdown (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		text      string
		delivered bool
	}{{"held", false}, {"served", true}} {
		if journaled, delivered := j.deliveredText(tc.text); !journaled || delivered != tc.delivered {
			t.Errorf("%s: journaled %v, delivered %v; want journaled, delivered %v", tc.text, journaled, delivered, tc.delivered)
		}
	}
	if scope, ok := p.Halted(); !ok || scope != pump.HaltAgents {
		t.Errorf("after the shutdown Halted() = %v, %v; want the halt still in force", scope, ok)
	}
}
