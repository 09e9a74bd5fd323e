package pump

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"time"
)

// admitWaiters is how many senders wait for room in the admission
// benchmarks and tests.
const admitWaiters = 200

// newAdmissionPump returns an unstarted pump whose admission budget is
// maxInFlight, for driving admission directly.
func newAdmissionPump(tb testing.TB, maxInFlight int) *Pump {
	tb.Helper()
	p, err := New(Options{MaxInFlight: maxInFlight, AdmitWait: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// awaitWaiting polls, with a generous deadline, until n admission waiters
// wait for room (yielding the processor in between: what it measures in a
// benchmark is how long the waiters take to settle).
func awaitWaiting(tb testing.TB, p *Pump, n int) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p.flightMu.Lock()
		got := p.admitWaiting
		p.flightMu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d admission waiters, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// receive returns the next value of ch, failing after a generous deadline.
func receive[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		tb.Fatalf("no %s within 60s", what)
		var zero T
		return zero
	}
}

// newTestListener returns a listener named name, with a queue, for driving
// admission directly.
func newTestListener(name string) *listener {
	l := &listener{queue: newSchedQueue(BreadthFirst)}
	l.Name = name
	l.QueueSize = 1 << 20
	return l
}

// cpuTime is the CPU time the process used so far (user and system).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAdmissionWaiters: admitWaiters senders wait on a full share —
// the whole in-flight budget (budget) or their target listener's share
// (listener) — and units are released one by one, each letting one more
// sender in. It reports per admitted message the time, the CPU time of the
// whole process (the waiters' re-checks included, wherever the scheduler
// ran them) and the waiter wake-ups: with targeted wake-ups one each; with
// a shared broadcast every waiter asleep at the release wakes (here fewer
// than all: releases come back to back, before the ones the last one woke
// are all asleep again).
func BenchmarkAdmissionWaiters(b *testing.B) {
	b.Run("budget", func(b *testing.B) { benchAdmissionWaiters(b, false) })
	b.Run("listener", func(b *testing.B) { benchAdmissionWaiters(b, true) })
}

// benchAdmissionWaiters is BenchmarkAdmissionWaiters for one share.
func benchAdmissionWaiters(b *testing.B, atListener bool) {
	b.StopTimer()
	var wakeups int64
	var cpu time.Duration
	for range b.N {
		p := newAdmissionPump(b, 8)
		wait, free := func() error { return p.admit(context.Background(), p.admitDeadline(), "") }, p.release
		for range 8 {
			if err := p.admit(context.Background(), time.Time{}, ""); err != nil {
				b.Fatal(err)
			}
		}
		if atListener {
			p = newAdmissionPump(b, 4096)
			l := newTestListener("slow")
			held := make(chan *delivery, admitWaiters+p.listenerShare)
			hold := func() {
				d := &delivery{at: l}
				p.holdDelivery(d)
				held <- d
			}
			// holdRoom queues a delivery in the room a wait was handed.
			holdRoom := func() {
				d := &delivery{at: l}
				p.flightMu.Lock()
				p.holdDeliveryLocked(d, true)
				p.flightMu.Unlock()
				held <- d
			}
			for range p.listenerShare {
				hold()
			}
			wait = func() error {
				err := p.waitRoom(context.Background(), p.admitDeadline(), l)
				if err == nil {
					holdRoom() // what ingress does once its target has room
				}
				return err
			}
			free = func() { p.releaseDelivery(receive(b, held, "held delivery")) }
		}
		admitted := make(chan error, admitWaiters)
		for range admitWaiters {
			go func() { admitted <- wait() }()
		}
		awaitWaiting(b, p, admitWaiters)
		before, cpuBefore := p.admitWakeups.Load(), cpuTime(b)
		b.StartTimer()
		for range admitWaiters {
			free()
			if err := receive(b, admitted, "admission"); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		wakeups += p.admitWakeups.Load() - before
		cpu += cpuTime(b) - cpuBefore
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*admitWaiters), "ns/admitted")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*admitWaiters), "cpu-ns/admitted")
	b.ReportMetric(float64(wakeups)/float64(b.N*admitWaiters), "wakeups/admitted")
}

// TestAdmissionWaitersInOrder: senders waiting for room — in the whole
// budget or at their target listener's share — get it in the order they
// came, one per freed unit; a waiter whose context ends meanwhile leaves
// without taking the next one's turn, and none is left waiting.
func TestAdmissionWaitersInOrder(t *testing.T) {
	const n = 40
	tests := []struct {
		name string
		// fill takes the whole room; wait waits for room and takes it
		// (nil or the wait's error); free frees one unit.
		setup func(t *testing.T, p *Pump) (fill func(), wait func(ctx context.Context) error, free func())
	}{
		{"budget", func(t *testing.T, p *Pump) (func(), func(context.Context) error, func()) {
			fill := func() {
				for range p.opts.MaxInFlight {
					if err := p.admit(t.Context(), time.Time{}, ""); err != nil {
						t.Fatal(err)
					}
				}
			}
			wait := func(ctx context.Context) error { return p.admit(ctx, p.admitDeadline(), "") }
			return fill, wait, p.release
		}},
		{"listener", func(t *testing.T, p *Pump) (func(), func(context.Context) error, func()) {
			l := newTestListener("slow")
			held := make(chan *delivery, n+p.listenerShare)
			hold := func() {
				d := &delivery{at: l}
				p.holdDelivery(d)
				held <- d
			}
			// holdRoom queues a delivery in the room a wait was handed.
			holdRoom := func() {
				d := &delivery{at: l}
				p.flightMu.Lock()
				p.holdDeliveryLocked(d, true)
				p.flightMu.Unlock()
				held <- d
			}
			fill := func() {
				for range p.listenerShare {
					hold()
				}
			}
			wait := func(ctx context.Context) error {
				err := p.waitRoom(ctx, p.admitDeadline(), l)
				if err == nil {
					holdRoom()
				}
				return err
			}
			free := func() { p.releaseDelivery(receive(t, held, "held delivery")) }
			return fill, wait, free
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newAdmissionPump(t, 64)
			fill, wait, free := tc.setup(t, p)
			fill()
			type result struct {
				i   int
				err error
			}
			results := make(chan result, n)
			cancels := make([]context.CancelFunc, n)
			for i := range n {
				ctx, cancel := context.WithCancel(t.Context())
				cancels[i] = cancel
				go func() { results <- result{i, wait(ctx)} }()
				awaitWaiting(t, p, i+1) // arrival order is i's order
			}
			var want []int
			for i := range n {
				if i%3 == 1 {
					cancels[i]() // gives up: must not hold up the ones after it
					if r := receive(t, results, "cancelled waiter"); r.i != i || !errors.Is(r.err, context.Canceled) {
						t.Fatalf("waiter %d ended with %v; want waiter %d cancelled", r.i, r.err, i)
					}
					continue
				}
				want = append(want, i)
			}
			var got []int
			for range want {
				free()
				r := receive(t, results, "admission")
				if r.err != nil {
					t.Fatalf("waiter %d: %v", r.i, r.err)
				}
				got = append(got, r.i)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("order of admission (-arrival +got):\n%s", diff)
			}
			for _, cancel := range cancels {
				cancel()
			}
		})
	}
}

// TestAdmissionWaitersShutdown: a shutdown ends every wait for room with
// ErrClosed — in the budget and at a listener — and takes nothing of the
// budget for them; the drain then ends once the work in flight is
// released.
func TestAdmissionWaitersShutdown(t *testing.T) {
	const n = 10
	p := newAdmissionPump(t, 8)
	l := newTestListener("slow")
	for range 8 {
		if err := p.admit(t.Context(), time.Time{}, ""); err != nil {
			t.Fatal(err)
		}
	}
	var held []*delivery
	for range p.listenerShare {
		d := &delivery{at: l}
		p.holdDelivery(d)
		held = append(held, d)
	}
	ended := make(chan error, 2*n)
	for range n {
		go func() { ended <- p.admit(t.Context(), p.admitDeadline(), "") }()
		go func() { ended <- p.waitRoom(t.Context(), p.admitDeadline(), l) }()
	}
	awaitWaiting(t, p, 2*n)
	stopped := make(chan error, 1)
	go func() { stopped <- p.Shutdown(t.Context()) }()
	for range 2 * n {
		if err := receive(t, ended, "end of a wait"); !errors.Is(err, ErrClosed) {
			t.Fatalf("wait for room ended with %v, want ErrClosed", err)
		}
	}
	if got, want := p.InFlight(), 8+len(held); got != want {
		t.Errorf("in flight %d after the waits ended, want %d", got, want)
	}
	for range 8 {
		p.release()
	}
	for _, d := range held {
		p.releaseDelivery(d)
	}
	if err := receive(t, stopped, "shutdown"); err != nil {
		t.Fatal(err)
	}
}

// TestAdmissionWaitersRefusedAtPace: when a release finds that the last of
// the senders waiting for room at a listener would wait there longer than
// MaxQueueWait, the latest arrivals are refused — as many as it takes —
// and the first in line gets the freed room.
func TestAdmissionWaitersRefusedAtPace(t *testing.T) {
	const n = 6
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := New(Options{MaxInFlight: 64, AdmitWait: time.Hour, MaxQueueWait: 12 * time.Second,
		Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	l := newTestListener("slow")
	var held []*delivery
	for range p.listenerShare { // 8 queued, none running
		d := &delivery{at: l}
		p.holdDelivery(d)
		held = append(held, d)
	}
	p.flightMu.Lock()
	l.pace.step = time.Second // one handling ends per second
	p.flightMu.Unlock()
	type result struct {
		i   int
		err error
	}
	results := make(chan result, n)
	for i := range n {
		go func() { results <- result{i, p.waitRoom(t.Context(), p.admitDeadline(), l)} }()
		awaitWaiting(t, p, i+1)
	}
	// One ends: 7 ahead and 6 waiting make the last wait 13 s, over the
	// 12 s bound: the last to come is refused; the first gets the room.
	p.releaseDelivery(held[0])
	got := map[int]string{}
	for range 2 {
		r := receive(t, results, "end of a wait")
		got[r.i] = "admitted"
		if r.err != nil {
			got[r.i] = "refused"
			busyOfErr(t, r.err, "about 13s of work queued")
		}
	}
	want := map[int]string{0: "admitted", n - 1: "refused"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waiters ended (-want +got):\n%s", diff)
	}
	awaitWaiting(t, p, n-2)
	p.flightMu.Lock()
	waiting := l.pace.waiting
	p.flightMu.Unlock()
	if waiting != n-2 {
		t.Errorf("%d counted waiting at the listener, want %d", waiting, n-2)
	}
	for _, d := range held[1:] { // the rest get room in turn
		p.releaseDelivery(d)
	}
	for range n - 2 {
		if r := receive(t, results, "room"); r.err != nil {
			t.Errorf("waiter %d: %v", r.i, r.err)
		}
	}
}

// busyOfErr fails unless err is a *BusyError whose reason has reason.
func busyOfErr(t *testing.T, err error, reason string) {
	t.Helper()
	var b *BusyError
	if !errors.As(err, &b) || !strings.Contains(b.Reason, reason) {
		t.Fatalf("err = %v, want busy with %q", err, reason)
	}
}
