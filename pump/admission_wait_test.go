package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// servedCall is one handler call of a metered listener: the message's text
// and when (on the fake clock) it started; done ends it.
type servedCall struct {
	text  string
	start time.Time
	done  chan struct{}
}

// metered is a one-worker listener of Ping whose calls the test ends one
// at a time (completion signals, no sleeps): its service rate is the
// test's.
func metered(t *testing.T, name string, clock *fakeClock, calls chan<- servedCall) pump.Listener {
	l := listenerOf(t, name, func(ctx context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		c := servedCall{text: in.Text, start: clock.Now(), done: make(chan struct{})}
		calls <- c
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		return nil, nil
	})
	l.Workers = 1
	return l
}

// awaitCall waits (generously) for the listener's next call.
func awaitCall(t *testing.T, calls <-chan servedCall) servedCall {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(60 * time.Second):
		t.Fatal("the listener's next call never started")
		return servedCall{}
	}
}

// TestAdmissionBoundsQueueWait: offered twice what a listener serves
// (two sends per second of the test's clock, one served), the pump admits
// only what can start within MaxQueueWait and refuses the rest at once as
// busy, with a retry hint — rather than admitting everything up to the
// listener's share and letting it wait ever longer. The listener never
// runs dry meanwhile: it serves one message per second throughout.
func TestAdmissionBoundsQueueWait(t *testing.T) {
	const (
		bound   = 5 * time.Second
		service = time.Second // one message per second of the fake clock
		steps   = 30
	)
	clock := newFakeClock()
	calls := make(chan servedCall, 1)
	// The share (4096/8) is far above what the test sends: only time can
	// refuse, and nothing ever waits for room (AdmitWait is long).
	j := newMarkJournal()
	p := startPump(t, pump.Options{Clock: clock.Now, AdmitWait: time.Hour, MaxQueueWait: bound, Journal: j},
		metered(t, "slow", clock, calls))
	sent := map[string]time.Time{} // admitted text → when (fake clock)
	var refused []*pump.BusyError
	var waits []string
	var longest time.Duration
	serve := func(c servedCall) {
		waited := c.start.Sub(sent[c.text])
		longest = max(longest, waited)
		if waited > bound+service {
			waits = append(waits, fmt.Sprintf("%s waited %s", c.text, waited))
		}
	}
	var running *servedCall
	n := 0
	for step := range steps {
		for range 2 {
			n++
			text := fmt.Sprint("m", n)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			err := p.Inject(ctx, pingTo(client, "slow", text), nil)
			cancel()
			var b *pump.BusyError
			switch {
			case err == nil:
				sent[text] = clock.Now()
			case errors.As(err, &b):
				if !strings.Contains(b.Reason, "listener slow busy") || b.RetryAfter < time.Second || b.Err != nil {
					t.Fatalf("step %d: refused %q retry after %s (%v), want the listener named and a retry hint", step,
						b.Reason, b.RetryAfter, b.Err)
				}
				refused = append(refused, b)
			default:
				t.Fatalf("step %d: Inject: %v", step, err)
			}
		}
		if running == nil {
			c := awaitCall(t, calls)
			serve(c)
			running = &c
		}
		// One second of service: the running call ends, the next starts.
		clock.advance(service)
		close(running.done)
		c := awaitCall(t, calls)
		serve(c)
		running = &c
	}
	// Drain what was admitted.
	handled := steps + 1
	for handled < len(sent) {
		clock.advance(service)
		close(running.done)
		c := awaitCall(t, calls)
		serve(c)
		running = &c
		handled++
	}
	close(running.done)
	if got := j.kinds()[pump.RecordMessage]; got != len(sent) {
		t.Errorf("%d messages journaled, want the %d admitted (nothing of a refused one is kept)", got, len(sent))
	}
	if len(waits) > 0 {
		t.Errorf("%d of %d admitted messages waited longer than %s + one service time to start: %s", len(waits),
			len(sent), bound, strings.Join(waits, ", "))
	}
	t.Logf("%d offered, %d admitted (the longest waited %s to start), %d refused", n, len(sent), longest, len(refused))
	// 60 offered at twice the service rate: about half must be refused (a
	// listener that never runs dry serves steps+1 of them in the window).
	if len(refused) == 0 || len(sent) < steps+1 {
		t.Errorf("%d admitted, %d refused of %d offered: want the listener kept busy and the excess refused", len(sent),
			len(refused), n)
	}
}

// TestAdmissionRefusesFarRoom: at a listener holding its share whose pace
// is known — one handling ends per second — a new message would wait about
// a second for room: it is refused at once, with a retry hint, instead of
// holding its sender for AdmitWait (an hour here) or the caller's deadline.
func TestAdmissionRefusesFarRoom(t *testing.T) {
	clock := newFakeClock()
	calls := make(chan servedCall, 1)
	// A share of 2 (16/8): one running, one queued. MaxQueueWait is far
	// off: only the wait for room can refuse.
	p := startPump(t, pump.Options{Clock: clock.Now, MaxInFlight: 16, AdmitWait: time.Hour, MaxQueueWait: time.Hour},
		metered(t, "slow", clock, calls))
	inject := func(text string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		return p.Inject(ctx, pingTo(client, "slow", text), nil)
	}
	for _, text := range []string{"a", "b"} {
		if err := inject(text); err != nil {
			t.Fatalf("inject %s: %v", text, err)
		}
	}
	running := awaitCall(t, calls)
	// Three seconds at one handling per second, the share full throughout.
	for i := range 3 {
		clock.advance(time.Second)
		close(running.done)
		running = awaitCall(t, calls)
		if err := inject(fmt.Sprint("c", i)); err != nil {
			t.Fatalf("inject once room appeared: %v", err)
		}
	}
	err := inject("d")
	var b *pump.BusyError
	if !errors.As(err, &b) {
		t.Fatalf("inject at the full listener = %v, want a BusyError", err)
	}
	if b.Err != nil || !strings.Contains(b.Reason, "listener slow busy") || b.RetryAfter != time.Second {
		t.Errorf("refused %q retry after %s (%v), want listener slow busy, retry after 1s, at once", b.Reason,
			b.RetryAfter, b.Err)
	}
	close(running.done)
	close(awaitCall(t, calls).done) // the one still queued
}

// TestAdmissionPaceAfterPause: an hour paused is not taken for an hour's
// pace. Once the listener is resumed, new messages are admitted as its
// backlog and measured pace allow — not refused because no handling ended
// while it was paused.
func TestAdmissionPaceAfterPause(t *testing.T) {
	clock := newFakeClock()
	calls := make(chan servedCall, 1)
	p := startPump(t, pump.Options{Clock: clock.Now, AdmitWait: time.Hour, MaxQueueWait: 5 * time.Second},
		metered(t, "slow", clock, calls))
	inject := func(text string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		return p.Inject(ctx, pingTo(client, "slow", text), nil)
	}
	for _, text := range []string{"a", "b", "c"} {
		if err := inject(text); err != nil {
			t.Fatalf("inject %s: %v", text, err)
		}
	}
	running := awaitCall(t, calls)
	// Learn the pace: one handling a second, two messages waiting.
	for i := range 3 {
		clock.advance(time.Second)
		close(running.done)
		running = awaitCall(t, calls)
		if err := inject(fmt.Sprint("d", i)); err != nil {
			t.Fatalf("inject while learning the pace: %v", err)
		}
	}
	if err := p.Pause("slow"); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Second)
	close(running.done) // ends; nothing starts while paused
	clock.advance(time.Hour)
	if err := p.Resume("slow"); err != nil {
		t.Fatal(err)
	}
	running = awaitCall(t, calls)
	for i := range 3 {
		if err := inject(fmt.Sprint("e", i)); err != nil {
			t.Fatalf("inject %d after the resume, one message waiting: %v", i, err)
		}
		clock.advance(time.Second)
		close(running.done)
		running = awaitCall(t, calls)
	}
	// Drain: one waiting behind the running one.
	clock.advance(time.Second)
	close(running.done)
	close(awaitCall(t, calls).done)
}

// TestAdmissionDefaultLetsAModelCallQueue: with the default bound, a
// one-worker listener busy for 20 s on one handling — an agent in a long
// model call, the common case — still admits a short queue behind it. The
// floor of the estimate (time without a handling ending) reads 20 s there:
// a default of 10 s refused the second message queued behind such a call,
// so two users of a busy agent got "busy" where a model call's wait is the
// expected one.
func TestAdmissionDefaultLetsAModelCallQueue(t *testing.T) {
	clock := newFakeClock()
	calls := make(chan servedCall, 1)
	p := startPump(t, pump.Options{Clock: clock.Now, AdmitWait: time.Hour}, metered(t, "agent", clock, calls))
	inject := func(text string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		return p.Inject(ctx, pingTo(client, "agent", text), nil)
	}
	if err := inject("first"); err != nil {
		t.Fatal(err)
	}
	running := awaitCall(t, calls)
	clock.advance(20 * time.Second) // a long model call
	admitted := 0
	for _, text := range []string{"second", "third"} {
		if err := inject(text); err != nil {
			t.Errorf("inject %s behind a 20 s handling: %v (default max queue wait %s)", text, err,
				pump.DefaultMaxQueueWait)
			continue
		}
		admitted++
	}
	for range admitted {
		close(running.done)
		running = awaitCall(t, calls)
	}
	close(running.done)
}
