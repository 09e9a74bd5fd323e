package console

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestOutboxCompletion covers waits for a conversation's turn: a
// completion arriving before and after the wait, an earlier turn's
// completion told after the next line was sent (it must not end the wait
// for that line), a wait given up whose completion comes later, the same
// turn waited for twice, and the bound on the conversations remembered.
func TestOutboxCompletion(t *testing.T) {
	o := newOutbox()
	var out strings.Builder
	stop := o.start(&out, true, false, nil)

	o.line("before")
	o.completed("early", 1)
	<-o.wait("early", 1) // completed before the wait: already closed
	o.release("early")

	ch := o.wait("late", 1)
	o.line("said before completing")
	o.completed("late", 1)
	<-ch
	o.release("late")

	next := o.wait("next", 2)
	o.completed("next", 1) // the turn before the line waited for, told late

	o.wait("gave-up", 1)
	o.release("gave-up")
	o.completed("gave-up", 1)

	twice := o.wait("twice", 1)
	o.completed("twice", 1)
	<-twice
	o.release("twice")

	o.completed("stray", 0) // a conversation the console never sent on
	o.completed("early", 2)
	stop()

	if got, want := out.String(), "before\nsaid before completing\n"; got != want {
		t.Errorf("written %q; want %q", got, want)
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if closed(next) {
		t.Error("the completion of turn 1 ended the wait for turn 2")
	}
	for _, w := range []struct {
		conv string
		turn uint64
		done bool
	}{
		{"gave-up", 1, true}, // the completion of a wait given up is kept for a later one
		{"twice", 1, true},   // waited for again (a session tracking it twice)
		{"early", 2, true},
		{"early", 3, false},
		{"stray", 1, false},
	} {
		if got := closed(o.wait(w.conv, w.turn)); got != w.done {
			t.Errorf("wait(%s, %d) done %v; want %v", w.conv, w.turn, got, w.done)
		}
		o.release(w.conv)
	}
}

// TestOutboxCompletionBound: a session remembers the latest completed
// turn of at most maxDone conversations, forgetting the least recently
// completed first.
func TestOutboxCompletionBound(t *testing.T) {
	o := newOutbox()
	stop := o.start(io.Discard, true, false, nil)
	for i := range maxDone + 1 { // c-0 forgotten
		o.completed(fmt.Sprintf("c-%d", i), 1)
	}
	o.completed("c-1", 2) // completed again: c-2 is the least recent now
	o.completed("c-new", 1)
	stop()
	if n := len(o.done); n != maxDone {
		t.Errorf("%d completed conversations remembered; want the bound %d", n, maxDone)
	}
	for conv, want := range map[string]uint64{"c-0": 0, "c-1": 2, "c-2": 0, "c-3": 1, "c-new": 1} {
		if got := o.done[conv]; got != want {
			t.Errorf("done[%s] = %d; want %d", conv, got, want)
		}
	}
}

// TestOutboxUntracked: a terminal session remembers no completions.
func TestOutboxUntracked(t *testing.T) {
	o := newOutbox()
	var out strings.Builder
	stop := o.start(&out, false, false, nil)
	o.completed("x", 1)
	o.line("done")
	stop()
	if len(o.done) != 0 || out.String() != "done\n" {
		t.Errorf("done %v, written %q", o.done, out.String())
	}
}
