package pump

import (
	"testing"
	"time"
)

// TestHandlerSlotsShare: a listener holds at most ceil(N/2) slots, even
// when the others are free; a freed slot goes to the waiting listener
// holding the fewest, ties in arrival order.
func TestHandlerSlotsShare(t *testing.T) {
	tests := []struct{ size, share int }{{1, 1}, {2, 1}, {3, 2}, {4, 2}, {20, 10}}
	for _, tc := range tests {
		s := newHandlerSlots(tc.size)
		if s.share != tc.share {
			t.Errorf("size %d: share %d, want %d", tc.size, s.share, tc.share)
		}
	}

	s := newHandlerSlots(3) // share 2
	a, b, c := &listener{}, &listener{}, &listener{}
	s.acquire(a)
	s.acquire(a)
	granted := make(chan *listener, 8)
	wait := func(l *listener) {
		go func() {
			s.acquire(l)
			granted <- l
		}()
	}
	waiters := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.waiters)
	}
	expect := func(want *listener, name string) {
		t.Helper()
		select {
		case got := <-granted:
			if got != want {
				t.Fatalf("slot went to another listener, want %s", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no slot granted, want one for %s", name)
		}
	}
	wait(a) // a holds its share: waits though a slot is free
	for waiters() != 1 {
		time.Sleep(time.Millisecond)
	}
	if s.used != 2 {
		t.Fatalf("used %d, want 2: a took more than its share", s.used)
	}
	s.acquire(b) // below its share: the free slot at once
	wait(b)      // every slot taken
	for waiters() != 2 {
		time.Sleep(time.Millisecond)
	}
	wait(c)
	for waiters() != 3 {
		time.Sleep(time.Millisecond)
	}
	// a frees one: a (1 held), b (1), c (0) wait; c holds the fewest.
	s.release(a)
	expect(c, "c (fewest held)")
	// b frees one: a (1) and b (0) wait below their share; b holds fewer.
	s.release(b)
	expect(b, "b (fewest held)")
	// c frees: a (1) and nobody else waits.
	s.release(c)
	expect(a, "a")
	if s.used != 3 || a.slotsHeld != 2 || b.slotsHeld != 1 || c.slotsHeld != 0 {
		t.Fatalf("used %d, held a %d b %d c %d; want 3, 2 1 0", s.used, a.slotsHeld, b.slotsHeld, c.slotsHeld)
	}
}

// TestHandlerSlotsWithdraw: withdrawing a conversation's waits ends them
// without a slot (wait reports false) and leaves the other waiters their
// place and their slots, in order; a waiter withdrawn by name is the only
// one taken, and one granted already cannot be withdrawn.
func TestHandlerSlotsWithdraw(t *testing.T) {
	s := newHandlerSlots(1)
	a, b := &listener{}, &listener{}
	if w := s.enter(a, &delivery{conv: "busy"}); w != nil {
		t.Fatal("the free slot was not taken at once")
	}
	doomed1 := s.enter(b, &delivery{conv: "doomed"})
	keep := s.enter(b, &delivery{conv: "keep"})
	doomed2 := s.enter(a, &delivery{conv: "doomed"})
	if got := s.waiting(b); got != 2 {
		t.Errorf("waiting(b) = %d, want 2", got)
	}
	if got := s.withdraw("doomed", doomed2); len(got) != 1 || got[0] != doomed2 {
		t.Fatalf("withdraw by name took %v, want only its waiter", got)
	}
	if got := s.withdraw("doomed", nil); len(got) != 1 || got[0] != doomed1 {
		t.Fatalf("withdraw took %v, want the conversation's other waiter", got)
	}
	for _, w := range []*slotWaiter{doomed1, doomed2} {
		if s.wait(w) {
			t.Error("a withdrawn wait reported a slot")
		}
	}
	if got := s.waiting(b); got != 1 {
		t.Errorf("waiting(b) = %d after the withdrawal, want 1", got)
	}
	s.release(a)
	if !s.wait(keep) {
		t.Fatal("the waiter kept got no slot")
	}
	if got := s.withdraw("keep", nil); len(got) != 0 {
		t.Errorf("withdraw took %d granted waiters, want none", len(got))
	}
	if s.used != 1 || b.slotsHeld != 1 || a.slotsHeld != 0 {
		t.Errorf("used %d, a holds %d, b holds %d; want 1, 0, 1", s.used, a.slotsHeld, b.slotsHeld)
	}
}
