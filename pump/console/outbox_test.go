package console

import (
	"fmt"
	"strings"
	"testing"
)

// TestOutboxCompletion covers a completion arriving before and after the wait,
// a wait given up (its late completion is dropped) and the bound on
// completions nobody waits for.
func TestOutboxCompletion(t *testing.T) {
	o := newOutbox()
	var out strings.Builder
	stop := o.start(&out, true, false, nil)

	o.line("before")
	o.completed("early")
	<-o.wait("early") // completed before the wait: already closed
	o.release("early")

	ch := o.wait("late")
	o.line("said before completing")
	o.completed("late")
	<-ch
	o.release("late")

	o.wait("gave-up")
	o.release("gave-up")
	o.completed("gave-up")

	for i := range maxUnclaimed + 10 {
		o.completed(fmt.Sprintf("stray-%d", i))
	}
	stop()

	if got, want := out.String(), "before\nsaid before completing\n"; got != want {
		t.Errorf("written %q; want %q", got, want)
	}
	if n := len(o.waits); n != maxUnclaimed {
		t.Errorf("%d completions remembered; want the bound %d", n, maxUnclaimed)
	}
	if _, ok := o.waits["gave-up"]; ok {
		t.Error("the late completion of an abandoned wait is remembered")
	}
}

// TestOutboxUntracked: a terminal session remembers no completions.
func TestOutboxUntracked(t *testing.T) {
	o := newOutbox()
	var out strings.Builder
	stop := o.start(&out, false, false, nil)
	o.completed("x")
	o.line("done")
	stop()
	if len(o.waits) != 0 || out.String() != "done\n" {
		t.Errorf("waits %v, written %q", o.waits, out.String())
	}
}
