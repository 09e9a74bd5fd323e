package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// earlyFixture is a pump whose one-worker listener slow the test serves on
// a fake clock (see metered), and the call running there.
type earlyFixture struct {
	t       *testing.T
	p       *pump.Pump
	clock   *fakeClock
	calls   chan servedCall
	running *servedCall
	// n counts the messages sent, admitted those taken and started the
	// calls begun.
	n, admitted, started int
}

func newEarlyFixture(t *testing.T, bound time.Duration) *earlyFixture {
	f := &earlyFixture{t: t, clock: newFakeClock(), calls: make(chan servedCall, 1)}
	f.p = startPump(t, pump.Options{Clock: f.clock.Now, AdmitWait: time.Hour, MaxQueueWait: bound},
		metered(t, "slow", f.clock, f.calls))
	t.Cleanup(f.drain)
	return f
}

// inject sends the next message to slow.
func (f *earlyFixture) inject() error {
	f.n++
	ctx, cancel := context.WithTimeout(f.t.Context(), 60*time.Second)
	defer cancel()
	err := f.p.Inject(ctx, pingTo(client, "slow", fmt.Sprint("m", f.n)), nil)
	if err == nil {
		f.admitted++
		if f.running == nil {
			f.next()
		}
	}
	return err
}

// serve ends the running call after d of the fake clock; the next queued
// one starts.
func (f *earlyFixture) serve(d time.Duration) {
	f.clock.advance(d)
	close(f.running.done)
	f.next()
}

// next waits for the next call to start.
func (f *earlyFixture) next() {
	c := awaitCall(f.t, f.calls)
	f.running = &c
	f.started++
}

// drain ends the running call and every queued one.
func (f *earlyFixture) drain() {
	for f.running != nil {
		close(f.running.done)
		f.running = nil
		if f.started < f.admitted {
			f.next()
		}
	}
}

// mustAdmit injects one message that must be taken.
func (f *earlyFixture) mustAdmit() {
	f.t.Helper()
	if err := f.inject(); err != nil {
		f.t.Fatalf("inject m%d: %v", f.n, err)
	}
}

// mustRefuse injects one message that admission must refuse at once.
func (f *earlyFixture) mustRefuse(reason string) *pump.BusyError {
	f.t.Helper()
	err := f.inject()
	b, ok := errors.AsType[*pump.BusyError](err)
	if !ok || !strings.Contains(b.Reason, reason) {
		f.t.Fatalf("inject m%d = %v, want refused as %q", f.n, err, reason)
	}
	return b
}

// refusing is f.p.Refusing("slow") as a *pump.BusyError (nil: none).
func (f *earlyFixture) refusing() *pump.BusyError {
	err := f.p.Refusing("slow")
	if err == nil {
		return nil
	}
	b, ok := errors.AsType[*pump.BusyError](err)
	if !ok || !errors.Is(err, pump.ErrBusy) {
		f.t.Fatalf("Refusing = %v, want a *pump.BusyError", err)
	}
	return b
}

// TestRefusingAfterStalledListener: a listener that has gone longer than
// max_queue_wait without finishing a handling, a message waiting there,
// refuses a new message at once. From then on Refusing answers the same
// refusal without a parse or a lock — until a handling there ends (the
// time it stalled no longer counts), the listener is paused, or 250 ms of
// the clock pass: then admission decides again.
func TestRefusingAfterStalledListener(t *testing.T) {
	tests := []struct {
		name string
		// change is what happens after the refusal; refusing what
		// Refusing says then.
		change   func(*earlyFixture)
		refusing bool
	}{
		{"nothing", func(*earlyFixture) {}, true},
		{"100ms of the clock", func(f *earlyFixture) { f.clock.advance(100 * time.Millisecond) }, true},
		{"a handling ends", func(f *earlyFixture) { f.serve(0) }, false},
		{"250ms of the clock", func(f *earlyFixture) { f.clock.advance(250 * time.Millisecond) }, false},
		{"paused", func(f *earlyFixture) {
			if err := f.p.Pause("slow"); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newEarlyFixture(t, 5*time.Second)
			f.mustAdmit() // running
			f.mustAdmit() // waiting
			f.mustAdmit() // waiting
			if b := f.refusing(); b != nil {
				t.Fatalf("Refusing before any refusal = %v", b)
			}
			f.clock.advance(6 * time.Second) // the running call stalls past the bound
			refused := f.mustRefuse("listener slow busy: about 6s of work queued")
			if b := f.refusing(); b != refused {
				t.Fatalf("Refusing right after the refusal = %v, want admission's %v", b, refused)
			}
			tt.change(f)
			if b := f.refusing(); (b != nil) != tt.refusing {
				t.Errorf("Refusing after %s = %v, want refusing %v", tt.name, b, tt.refusing)
			}
			if err := f.p.Resume("slow"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRefusingAtPace: a listener whose backlog, at its measured pace of a
// handling per second, would keep a new message waiting longer than
// max_queue_wait refuses it at once; Refusing answers the same until the
// backlog should be short enough again at that pace, 250 ms at most. Then
// the next message is decided in full, refused again, and Refusing
// follows. A message to another listener, or with no bound set, is never
// refused early.
func TestRefusingAtPace(t *testing.T) {
	f := newEarlyFixture(t, 5*time.Second)
	refused := f.refuseAtPace()
	if b := f.refusing(); b != refused {
		t.Fatalf("Refusing right after the refusal = %v, want admission's %v", b, refused)
	}
	f.clock.advance(249 * time.Millisecond)
	if b := f.refusing(); b != refused {
		t.Fatalf("Refusing 249ms later = %v, want admission's %v", b, refused)
	}
	f.clock.advance(time.Millisecond)
	if b := f.refusing(); b != nil {
		t.Fatalf("Refusing 250ms later = %v, want the next message decided in full", b)
	}
	again := f.mustRefuse("listener slow busy: about")
	if b := f.refusing(); b != again {
		t.Fatalf("Refusing after the next refusal = %v, want %v", b, again)
	}
	if err := f.p.Refusing("nobody"); err != nil {
		t.Errorf("Refusing an unknown listener = %v", err)
	}
}

// refuseAtPace sends two messages a second to slow, which serves one, until
// its backlog is more than 5 s of work at that pace and a message is
// refused; it returns the refusal.
func (f *earlyFixture) refuseAtPace() *pump.BusyError {
	f.t.Helper()
	f.mustAdmit()
	f.mustAdmit()
	for step := 0; ; step++ {
		if step == 20 {
			f.t.Fatal("never refused")
		}
		f.serve(time.Second)
		for range 2 {
			if err := f.inject(); err != nil {
				b, ok := errors.AsType[*pump.BusyError](err)
				if !ok {
					f.t.Fatalf("inject: %v", err)
				}
				return b
			}
		}
	}
}

// TestRefusingForgottenOnAdmission: a message admission takes at a
// listener — its backlog shorter since, here one handling ended at once —
// ends the early refusal there before its time: what it predicted no
// longer holds.
func TestRefusingForgottenOnAdmission(t *testing.T) {
	f := newEarlyFixture(t, 5*time.Second)
	refused := f.refuseAtPace()
	if b := f.refusing(); b != refused {
		t.Fatalf("Refusing right after the refusal = %v, want admission's %v", b, refused)
	}
	f.serve(0)
	f.mustAdmit() // Inject goes through admission, whatever Refusing says
	if b := f.refusing(); b != nil {
		t.Fatalf("Refusing after a message was admitted = %v, want none", b)
	}
}

// TestRefusingWithoutBound: with max_queue_wait off, nothing refuses at
// once, and Refusing never answers busy however far behind a listener is.
func TestRefusingWithoutBound(t *testing.T) {
	f := newEarlyFixture(t, -1)
	for range 4 {
		f.mustAdmit()
	}
	f.clock.advance(time.Hour)
	f.mustAdmit()
	if err := f.p.Refusing("slow"); err != nil {
		t.Errorf("Refusing without a bound = %v", err)
	}
}

// TestRefusingFarRoom: at a listener holding its share whose pace — one
// handling a second — puts room for a new message further off than a
// quarter of a second, admission refuses the message at once, and Refusing
// answers the same for the next ones until room should be that close
// again at that pace (250 ms at most).
func TestRefusingFarRoom(t *testing.T) {
	f := &earlyFixture{t: t, clock: newFakeClock(), calls: make(chan servedCall, 1)}
	// A share of 2 (16/8): one running, one queued. MaxQueueWait is far
	// off: only the wait for room refuses.
	f.p = startPump(t, pump.Options{Clock: f.clock.Now, MaxInFlight: 16, AdmitWait: time.Hour, MaxQueueWait: time.Hour},
		metered(t, "slow", f.clock, f.calls))
	t.Cleanup(f.drain)
	f.mustAdmit()
	f.mustAdmit()
	for range 3 { // learn the pace, the share full throughout
		f.serve(time.Second)
		f.mustAdmit()
	}
	refused := f.mustRefuse("listener slow busy")
	if b := f.refusing(); b != refused {
		t.Fatalf("Refusing right after the refusal = %v, want admission's %v", b, refused)
	}
	f.clock.advance(250 * time.Millisecond)
	if b := f.refusing(); b != nil {
		t.Fatalf("Refusing 250ms later = %v, want the next message decided in full", b)
	}
}
