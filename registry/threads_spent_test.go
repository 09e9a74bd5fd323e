package registry

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mustForward is ForwardAs without a ref or a profile.
func mustForward(t *testing.T, th *Threads, id, to string) (string, bool) {
	t.Helper()
	child, _, spent, err := th.ForwardAs(id, to, "", "")
	if err != nil {
		t.Fatalf("ForwardAs(%s, %q): %v", id, to, err)
	}
	return child, spent
}

// liveIDs returns the ids of th's live threads, sorted.
func liveIDs(th *Threads) []string {
	var ids []string
	for id := range th.DebugDump() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestEndSpent: EndSpent ends the threads that forwarded (ForwardAs) and
// have no live thread below them, deepest first, so a chain of them ends
// whole; it never ends a root, a thread that only extended (Extend), one
// that awaits (Await, even when it forwarded before or after), one keep
// keeps, or one with a live child — nor their spent ancestors.
func TestEndSpent(t *testing.T) {
	type chain struct {
		root, a, b, c string // root → a → b → c, each forwarded by its parent
	}
	tests := []struct {
		name string
		// setup shapes the tree below root and returns the ids that must
		// stay besides root.
		setup func(t *testing.T, th *Threads, ch *chain) (keep func(string) bool, stay []string)
		// ended is how many EndSpent must report.
		ended int
	}{
		{
			name: "a plain chain ends whole",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				if err := th.End(ch.c); err != nil { // the leaf returned nil
					t.Fatal(err)
				}
				return nil, nil
			},
			ended: 2,
		},
		{
			name: "a live leaf keeps the chain",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				return nil, []string{ch.a, ch.b, ch.c}
			},
		},
		{
			name: "an awaiting thread stays, and its ancestors",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				if err := th.End(ch.c); err != nil {
					t.Fatal(err)
				}
				th.Await(ch.b)
				return nil, []string{ch.a, ch.b}
			},
		},
		{
			name: "a forward after Await does not make it spent",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				if err := th.End(ch.c); err != nil {
					t.Fatal(err)
				}
				th.Await(ch.b)
				d, spent := mustForward(t, th, ch.b, "d")
				if spent {
					t.Error("ForwardAs reported an awaiting thread spent")
				}
				if err := th.End(d); err != nil {
					t.Fatal(err)
				}
				return nil, []string{ch.a, ch.b}
			},
		},
		{
			name: "keep keeps a thread and its ancestors",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				if err := th.End(ch.c); err != nil {
					t.Fatal(err)
				}
				return func(id string) bool { return id == ch.b }, []string{ch.a, ch.b}
			},
		},
		{
			name: "a thread that only extended stays",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				x := mustExtend(t, th, ch.c, "x") // c did not forward: it is not spent
				if err := th.End(x); err != nil {
					t.Fatal(err)
				}
				return nil, []string{ch.a, ch.b, ch.c}
			},
		},
		{
			name: "an ended branch goes, a live sibling stays",
			setup: func(t *testing.T, th *Threads, ch *chain) (func(string) bool, []string) {
				if err := th.End(ch.c); err != nil {
					t.Fatal(err)
				}
				x, _ := mustForward(t, th, ch.a, "x") // a's second forward, still running
				return nil, []string{ch.a, x}
			},
			ended: 1, // b
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := newTestThreads(newFakeClock(), nil)
			var ch chain
			ch.root = mustBegin(t, th, "client", "first")
			var rootSpent bool
			ch.a, rootSpent = mustForward(t, th, ch.root, "a")
			if rootSpent {
				t.Error("ForwardAs reported a conversation root spent")
			}
			ch.b, _ = mustForward(t, th, ch.a, "b")
			var spent bool
			ch.c, spent = mustForward(t, th, ch.b, "c")
			if !spent {
				t.Error("ForwardAs did not report b spent")
			}
			keep, stay := tc.setup(t, th, &ch)
			var ends [][]string
			th.OnEnd(func(ids []string) { ends = append(ends, ids) })
			if got := th.EndSpent(ch.root, keep); got != tc.ended {
				t.Errorf("EndSpent = %d, want %d", got, tc.ended)
			}
			want := append([]string{ch.root}, stay...)
			slices.Sort(want)
			if diff := cmp.Diff(want, liveIDs(th)); diff != "" {
				t.Errorf("live threads (-want +got):\n%s", diff)
			}
			var told int
			for _, ids := range ends {
				told += len(ids)
			}
			if told != tc.ended {
				t.Errorf("subscribers heard of %d ended threads, want %d", told, tc.ended)
			}
		})
	}
	th := newTestThreads(newFakeClock(), nil)
	if got := th.EndSpent("not-a-thread", nil); got != 0 {
		t.Errorf("EndSpent(bad id) = %d", got)
	}
}
