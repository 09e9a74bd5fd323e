package auth

import (
	"strconv"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := newLimiter(3, time.Minute, 2*time.Minute)
	now := t0
	type step struct {
		advance    time.Duration
		fail       bool
		key        string
		wantLocked bool // result of fail(key)
		wantCheck  bool // locked(key) afterwards
	}
	steps := []step{
		{fail: true, key: "a"},
		{advance: 30 * time.Second, fail: true, key: "a"},
		{advance: 31 * time.Second, fail: true, key: "a"}, // the first failure left the window
		{fail: true, key: "a", wantLocked: true, wantCheck: true},
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
			if got := l.fail(s.key, now); got != s.wantLocked {
				t.Fatalf("step %d: fail(%q) locked = %v, want %v", i, s.key, got, s.wantLocked)
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
	if n := l.prune(now.Add(time.Minute)); n != 1 || l.size() != 0 {
		t.Fatalf("prune after the window: forgot %d, %d left", n, l.size())
	}
}

// TestLimiterBounded: a flood of distinct keys does not grow the map past
// the cap once their failures age out.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(5, time.Minute, time.Minute)
	for i := range maxLimiterKeys {
		l.fail(strconv.Itoa(i), t0)
	}
	l.fail("late", t0.Add(2*time.Minute))
	if n := l.size(); n != 1 {
		t.Fatalf("after the flood aged out: %d keys, want 1", n)
	}
}
