package pump

import (
	"context"
	"runtime"
	"testing"
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

// BenchmarkAdmissionWaiters: admitWaiters senders wait on a full share —
// the whole in-flight budget (budget) or their target listener's share
// (listener) — and units are released one by one, each letting one more
// sender in. It reports the time and the waiter wake-ups per admitted
// message: with targeted wake-ups one each; with a shared broadcast every
// waiter parked at the release wakes.
func BenchmarkAdmissionWaiters(b *testing.B) {
	b.Run("budget", func(b *testing.B) {
		b.StopTimer()
		var wakeups int64
		for range b.N {
			p := newAdmissionPump(b, 8)
			for range 8 {
				if err := p.admit(context.Background(), time.Time{}, ""); err != nil {
					b.Fatal(err)
				}
			}
			admitted := make(chan error, admitWaiters)
			for range admitWaiters {
				go func() { admitted <- p.admit(context.Background(), p.admitDeadline(), "") }()
			}
			awaitWaiting(b, p, admitWaiters)
			before := p.admitWakeups.Load()
			b.StartTimer()
			for range admitWaiters {
				p.release()
				if err := receive(b, admitted, "admission"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			wakeups += p.admitWakeups.Load() - before
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*admitWaiters), "ns/admitted")
		b.ReportMetric(float64(wakeups)/float64(b.N*admitWaiters), "wakeups/admitted")
	})
	b.Run("listener", func(b *testing.B) {
		b.StopTimer()
		var wakeups int64
		for range b.N {
			p := newAdmissionPump(b, 4096)
			l := newTestListener("slow")
			held := make(chan *delivery, admitWaiters+p.listenerShare)
			for range p.listenerShare {
				d := &delivery{at: l}
				p.holdDelivery(d)
				held <- d
			}
			admitted := make(chan error, admitWaiters)
			for range admitWaiters {
				go func() {
					err := p.waitRoom(context.Background(), p.admitDeadline(), l)
					if err == nil {
						d := &delivery{at: l}
						p.holdDelivery(d) // what ingress does once its target has room
						held <- d
					}
					admitted <- err
				}()
			}
			awaitWaiting(b, p, admitWaiters)
			before := p.admitWakeups.Load()
			b.StartTimer()
			for range admitWaiters {
				p.releaseDelivery(receive(b, held, "held delivery"))
				if err := receive(b, admitted, "room"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			wakeups += p.admitWakeups.Load() - before
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*admitWaiters), "ns/admitted")
		b.ReportMetric(float64(wakeups)/float64(b.N*admitWaiters), "wakeups/admitted")
	})
}
