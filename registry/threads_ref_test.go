package registry

import (
	"errors"
	"testing"
)

// TestThreadRefs: a child opened with a correlation ref keeps it — its
// siblings to the same listener keep theirs — through CallerRef, Ref, the
// sink's record and a restore; it is forgotten when the child ends, and a
// thread opened without one has none.
func TestThreadRefs(t *testing.T) {
	clk := newFakeClock()
	sink := newRecordingThreadSink()
	th := newTestThreads(clk, sink)
	root := mustBegin(t, th, "console", "agent")
	a, err := th.ExtendRef(root, "calculate", "call_a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := th.ExtendRef(root, "calculate", "call_b")
	if err != nil {
		t.Fatal(err)
	}
	plain := mustExtend(t, th, root, "calculate")
	deep := mustExtend(t, th, a, "helper") // a hop below the call has no ref of its own

	for id, want := range map[string]string{a: "call_a", b: "call_b", plain: "", deep: "", root: ""} {
		if got := th.Ref(id); got != want {
			t.Errorf("Ref(%s) = %q, want %q", id, got, want)
		}
	}
	caller, reply, ref, err := th.CallerRef(b)
	if err != nil || caller != "agent" || reply != root || ref != "call_b" {
		t.Fatalf("CallerRef = %q %q %q %v", caller, reply, ref, err)
	}
	if _, _, _, err := th.CallerRef("not-a-thread"); !errors.Is(err, ErrUnknownThread) {
		t.Fatalf("CallerRef of garbage: %v", err)
	}
	sink.mu.Lock()
	if got := sink.live[a].Ref; got != "call_a" {
		t.Errorf("sink record of a has ref %q", got)
	}
	sink.mu.Unlock()

	restored := newTestThreads(clk, nil)
	if err := restored.Restore(th.Records()); err != nil {
		t.Fatal(err)
	}
	if got := restored.Ref(b); got != "call_b" {
		t.Errorf("restored Ref(b) = %q", got)
	}

	if _, _, err := th.Prune(a); err != nil {
		t.Fatal(err)
	}
	if got := th.Ref(a); got != "" {
		t.Errorf("Ref of an ended thread = %q", got)
	}
	if got := th.Ref(b); got != "call_b" {
		t.Errorf("Ref(b) after its sibling ended = %q", got)
	}
	// The slot freed by a is reused without its ref.
	c := mustExtend(t, th, root, "calculate")
	if got := th.Ref(c); got != "" {
		t.Errorf("a new thread inherited ref %q", got)
	}
}
