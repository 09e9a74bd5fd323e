package federation

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// busyClock is the callee pump's clock in the busy tests, moved by them.
type busyClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *busyClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *busyClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestCallRefusedBusyEarly: a peer's call for a listener the pump is
// refusing as busy is nacked as busy with a retry hint — by admission's
// full decision for the first, then, once its signature verified, before
// the pump reads anything of it or anything of it is recorded — and a
// refused call is never taken as received: sent again once the listener
// is free, it is delivered (once), not dropped as a copy.
func TestCallRefusedBusyEarly(t *testing.T) {
	aKey := newKey(t)
	clock := &busyClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	var reads atomic.Int64
	hold := make(chan struct{})
	c := newCalleePumped(t, aKey, newKey(t), "", hold, nil, nil, func(o *pump.Options) {
		o.Clock, o.MaxQueueWait, o.MaxConcurrentHandlers = clock.Now, 5*time.Second, 1 // echo: one worker
		o.Observer = pump.StageObserverFunc(func(s pump.StageSample) {
			if s.Stage == pump.StageRead {
				reads.Add(1)
			}
		})
	})
	entered := make(chan string, 8)
	c.mu.Lock()
	c.entered = entered
	c.mu.Unlock()
	released := false
	t.Cleanup(func() {
		if !released {
			close(hold)
		}
	})
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	echo := func(text string) []byte { return r.call("echo", `<Echo xmlns=""><Text>`+text+`</Text></Echo>`) }
	awaitEntered := func(want string) {
		t.Helper()
		select {
		case got := <-entered:
			if got != want {
				t.Fatalf("echo of %q began, want %q", got, want)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("echo of %q never began", want)
		}
	}
	if ack, _ := r.send(echo("one")); ack.Type != frameAck {
		t.Fatalf("first call: %+v, want an ack", ack)
	}
	awaitEntered("one")
	if ack, _ := r.send(echo("two")); ack.Type != frameAck { // waits behind one
		t.Fatalf("second call: %+v, want an ack", ack)
	}
	clock.advance(10 * time.Second) // one stalls past max_queue_wait

	busyNack := func(t *testing.T, name string, f frame) {
		t.Helper()
		if f.Type != frameNack || f.Reason != ReasonBusy || f.RetryAfter < 1 || !strings.HasPrefix(f.Error, "Organism busy: listener echo busy") {
			t.Errorf("%s: %+v, want a busy nack with a retry hint", name, f)
		}
	}
	ack, _ := r.send(echo("three"))
	busyNack(t, "call at the stalled listener", ack)

	before := reads.Load()
	four := echo("four")
	ack, _ = r.send(four)
	busyNack(t, "next call", ack)
	if n := reads.Load() - before; n != 0 {
		t.Errorf("the pump read %d messages for a call refused busy early, want none", n)
	}
	var early int64
	for _, rc := range c.pump.Refusals() {
		if rc.Listener == "echo" && rc.Reason == pump.RefusedEarly {
			early = rc.Count
		}
	}
	if early != 1 {
		t.Errorf("early refusals at echo: %d, want 1 (%v)", early, c.pump.Refusals())
	}

	// The stall ends: the same call, sent again, is taken and delivered.
	close(hold)
	released = true
	awaitEntered("two")
	if ack, _ := r.send(four); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("the refused call sent again: %+v, want it taken", ack)
	}
	awaitEntered("four")
	if diff := cmp.Diff([]string{"a:one", "a:two", "a:four"}, c.seen()); diff != "" {
		t.Errorf("echoed (-want +got):\n%s", diff)
	}
}

// TestBusyNackIsBusyError: the caller's error for a call the peer nacked
// as busy matches ErrRefused and pump.ErrBusy and carries the hint.
func TestBusyNackIsBusyError(t *testing.T) {
	err := busyRefusal("b", "Organism busy: listener echo busy", 7)
	b, ok := errors.AsType[*pump.BusyError](err)
	if !errors.Is(err, ErrRefused) || !errors.Is(err, pump.ErrBusy) || !ok || b.RetryAfter != 7*time.Second {
		t.Fatalf("err = %v (busy %v), want ErrRefused and pump.ErrBusy retrying after 7s", err, b)
	}
}
