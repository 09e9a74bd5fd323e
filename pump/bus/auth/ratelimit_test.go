package auth

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// failOnce reserves a slot of key and settles it as a failure: the lockout
// it caused, or ok false when the reservation was refused.
func failOnce(l *limiter, key string, now time.Time) (lockedFor time.Duration, ok bool) {
	if ok, _ := l.reserve(key, now); !ok {
		return 0, false
	}
	return l.fail(key, now), true
}

func TestLimiter(t *testing.T) {
	l := newLimiter(3, time.Minute, 2*time.Minute, time.Hour)
	now := t0
	type step struct {
		advance   time.Duration
		fail      bool
		key       string
		wantLock  time.Duration // lockout caused by the failure
		refused   bool          // the reservation is refused
		wantCheck bool          // locked(key) afterwards
	}
	steps := []step{
		{fail: true, key: "a"},
		{advance: 30 * time.Second, fail: true, key: "a"},
		{advance: 31 * time.Second, fail: true, key: "a"}, // the first failure left the window
		{fail: true, key: "a", wantLock: 2 * time.Minute, wantCheck: true},
		{fail: true, key: "a", refused: true, wantCheck: true},
		{key: "b"},
		{advance: 2*time.Minute - time.Second, key: "a", wantCheck: true},
		{advance: time.Second, key: "a"},
		{fail: true, key: "a"}, // the lockout reset the count
		{fail: true, key: ""},  // no address: never limited
		{fail: true, key: ""},
		{fail: true, key: ""},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if s.fail {
			got, ok := failOnce(l, s.key, now)
			if ok == s.refused || got != s.wantLock {
				t.Fatalf("step %d: fail(%q) = %v, reserved %v; want %v, reserved %v", i, s.key, got, ok, s.wantLock, !s.refused)
			}
		}
		if got := l.locked(s.key, now); got != s.wantCheck {
			t.Fatalf("step %d: locked(%q) = %v, want %v", i, s.key, got, s.wantCheck)
		}
	}
	if n := l.size(); n != 1 {
		t.Fatalf("tracking %d keys, want 1", n)
	}
	if n := l.prune(now); n != 0 {
		t.Fatalf("pruned %d keys with a recent failure", n)
	}
	// The lockout streak is remembered for maxLockout after the lockout.
	if n := l.prune(now.Add(time.Minute)); n != 0 {
		t.Fatalf("pruned %d keys with a lockout streak", n)
	}
	if n := l.prune(now.Add(time.Hour)); n != 1 || l.size() != 0 {
		t.Fatalf("prune after the streak: forgot %d, %d left", n, l.size())
	}
}

// TestLimiterReserveHolds: however many attempts of one key run at once,
// at most max get a slot; the rest are refused before anything is checked.
func TestLimiterReserveHolds(t *testing.T) {
	const max, n = 5, 200
	l := newLimiter(max, time.Minute, time.Minute, time.Hour)
	var (
		reserved, refused atomic.Int32
		start             = make(chan struct{})
		wg                sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			<-start
			ok, wait := l.reserve("alice\x00192.0.2.1", t0)
			if !ok {
				if wait <= 0 {
					t.Errorf("refused with wait %v", wait)
				}
				refused.Add(1)
				return
			}
			reserved.Add(1)
			l.fail("alice\x00192.0.2.1", t0)
		})
	}
	close(start)
	wg.Wait()
	if reserved.Load() > max || reserved.Load()+refused.Load() != n {
		t.Fatalf("%d reserved, %d refused of %d; want at most %d reserved", reserved.Load(), refused.Load(), n, max)
	}
	if !l.locked("alice\x00192.0.2.1", t0) {
		t.Error("the key is not locked out after the burst")
	}
}

// TestLimiterPending: attempts in flight fill the budget; a refused
// attempt waits pendingRetry; release gives a slot back uncounted and
// forgive forgets the failures.
func TestLimiterPending(t *testing.T) {
	l := newLimiter(2, time.Minute, time.Minute, time.Hour)
	for range 2 {
		if ok, _ := l.reserve("k", t0); !ok {
			t.Fatal("reserve refused under the limit")
		}
	}
	if ok, wait := l.reserve("k", t0); ok || wait != pendingRetry {
		t.Fatalf("third reserve = %v, %v; want refused, %v", ok, wait, pendingRetry)
	}
	l.release("k", t0)
	if ok, _ := l.reserve("k", t0); !ok {
		t.Fatal("reserve refused after a release")
	}
	if d := l.fail("k", t0); d != 0 {
		t.Fatalf("first failure locked out for %v", d)
	}
	l.forgive("k") // settles the second reservation as a success
	// The forgiven failure no longer counts: the whole budget is free.
	for range 2 {
		if ok, _ := l.reserve("k", t0); !ok {
			t.Fatal("reserve refused after forgive")
		}
	}
	if d := l.fail("k", t0); d != 0 {
		t.Fatalf("the first failure after forgive locked out for %v", d)
	}
	if d := l.fail("k", t0); d != time.Minute {
		t.Fatalf("the second failure after forgive locked out for %v, want 1m", d)
	}
}

// TestLimiterBackoff: each consecutive lockout doubles, up to maxLockout;
// a key that stayed out of lockout for maxLockout starts again.
func TestLimiterBackoff(t *testing.T) {
	const lockout, maxLockout = time.Minute, 5 * time.Minute
	l := newLimiter(2, time.Minute, lockout, maxLockout)
	now := t0
	lockOut := func() time.Duration {
		t.Helper()
		var d time.Duration
		for range 2 {
			var ok bool
			if d, ok = failOnce(l, "k", now); !ok {
				t.Fatalf("refused at %v", now.Sub(t0))
			}
		}
		if ok, wait := l.reserve("k", now); ok || wait != d {
			t.Fatalf("right after the lockout: reserve = %v, wait %v; want refused for %v", ok, wait, d)
		}
		return d
	}
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		if got := lockOut(); got != want {
			t.Fatalf("lockout %d lasts %v, want %v", i+1, got, want)
		}
		now = now.Add(want) // the next attempt comes as soon as the lockout ends
	}
	now = now.Add(maxLockout) // quiet for maxLockout: the streak is forgotten
	if got := lockOut(); got != lockout {
		t.Fatalf("after a quiet period the lockout lasts %v, want %v", got, lockout)
	}
}

// TestLimiterBounded: a flood of distinct keys does not grow the map past
// the cap, whether their failures aged out or not.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(5, time.Minute, time.Minute, time.Minute)
	for i := range maxLimiterKeys {
		failOnce(l, strconv.Itoa(i), t0)
	}
	failOnce(l, "late", t0.Add(2*time.Minute))
	if n := l.size(); n != 1 {
		t.Fatalf("after the flood aged out: %d keys, want 1", n)
	}

	// Every key still remembered: the one forgotten soonest is evicted.
	l = newLimiter(1, time.Minute, time.Minute, time.Minute)
	l.maxKeys = 4
	for i := range 4 {
		failOnce(l, strconv.Itoa(i), t0.Add(time.Duration(i)*time.Second))
	}
	failOnce(l, "new", t0.Add(10*time.Second))
	if n := l.size(); n != 4 {
		t.Fatalf("over the cap: %d keys, want 4", n)
	}
	if l.locked("0", t0.Add(10*time.Second)) || !l.locked("1", t0.Add(10*time.Second)) || !l.locked("new", t0.Add(10*time.Second)) {
		t.Error("evicted the wrong key: want the oldest lockout (key 0) gone")
	}
}

// TestAddrKey: IPv6 clients count per /64.
func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1",
		"::ffff:192.0.2.1":     "192.0.2.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"":                     "",
		"not-an-ip":            "not-an-ip",
	} {
		if got := addrKey(in); got != want {
			t.Errorf("addrKey(%q) = %q, want %q", in, got, want)
		}
	}
}
