package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// TestEndedRoot: a thread that ended — pruned, ended with its conversation,
// ended as spent — is remembered with its conversation's root, a root
// with itself; a live thread, a thread never used and a malformed id are
// not; the shard forgets its oldest ended thread once endedRemembered
// more have ended.
func TestEndedRoot(t *testing.T) {
	th := NewThreads(ThreadsConfig{})
	root := uuid.NewString()
	if err := th.Begin(root, "client", "a"); err != nil {
		t.Fatal(err)
	}
	pruned, err := th.Extend(root, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := th.Prune(pruned); err != nil {
		t.Fatal(err)
	}
	spent, _ := mustForward(t, th, root, "c")
	below, _ := mustForward(t, th, spent, "d")
	if _, _, err := th.Prune(below); err != nil {
		t.Fatal(err)
	}
	th.EndSpent(root, nil)
	live, err := th.Extend(root, "e")
	if err != nil {
		t.Fatal(err)
	}
	other := uuid.NewString()
	if err := th.Begin(other, "client", "a"); err != nil {
		t.Fatal(err)
	}
	ended, err := th.Extend(other, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := th.End(other); err != nil {
		t.Fatal(err)
	}

	type result struct {
		Root string
		OK   bool
	}
	tests := []struct {
		name, id string
		want     result
	}{
		{"pruned", pruned, result{root, true}},
		{"ended as spent", spent, result{root, true}},
		{"pruned below a spent one", below, result{root, true}},
		{"ended with its conversation", ended, result{other, true}},
		{"an ended root", other, result{other, true}},
		{"live", live, result{}},
		{"a live root", root, result{}},
		{"never used", uuid.NewString(), result{}},
		{"malformed", "nope", result{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got result
			got.Root, got.OK = th.EndedRoot(tc.id)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EndedRoot (-want +got):\n%s", diff)
			}
		})
	}

	// Bounded: endedRemembered more threads of root's shard end.
	for range endedRemembered {
		child, err := th.Extend(root, "f")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := th.Prune(child); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok := th.EndedRoot(pruned); ok {
		t.Errorf("EndedRoot(the oldest ended thread) = %q, true after %d more ended: want it forgotten", got,
			endedRemembered)
	}
}

// TestEndedRootNewest: a thread id that ended twice — an inner hop pruned,
// then continued by its outside party as a conversation of its own that
// ended too — is remembered with the root it ended under last, so Kill of
// it names the conversation it last belonged to, not an older one that
// may still run.
func TestEndedRootNewest(t *testing.T) {
	th := NewThreads(ThreadsConfig{})
	old := uuid.NewString()
	if err := th.Begin(old, "client", "a"); err != nil {
		t.Fatal(err)
	}
	reused, err := th.Extend(old, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := th.Prune(reused); err != nil {
		t.Fatal(err)
	}
	if err := th.Begin(reused, "client", "b"); err != nil {
		t.Fatal(err)
	}
	if err := th.End(reused); err != nil {
		t.Fatal(err)
	}
	root, ok := th.EndedRoot(reused)
	if diff := cmp.Diff(reused, root); !ok || diff != "" {
		t.Errorf("EndedRoot(a thread ended twice) = %q, %t; want the root it ended under last (-want +got):\n%s",
			root, ok, diff)
	}
}

// TestEndedRingNewestFirst: the ring answers the root noted last for an id
// noted more than once, wherever in the ring the notes fall — after the
// ring wrapped too.
func TestEndedRingNewestFirst(t *testing.T) {
	id, first, second := uuid.New(), uuid.New(), uuid.New()
	tests := []struct {
		name   string
		before int // other threads noted before id's first note
	}{
		{"in order", 0},
		{"the second note wrapped to the ring's start", endedRemembered - 1},
		{"both near the ring's end", endedRemembered - 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e endedRing
			for range tc.before {
				e.note(uuid.New(), uuid.New())
			}
			e.note(id, first)
			e.note(uuid.New(), uuid.New())
			e.note(id, second)
			got, ok := e.rootOf(id)
			if diff := cmp.Diff(second, got); !ok || diff != "" {
				t.Errorf("rootOf = %v, %t; want the newest root (-want +got):\n%s", got, ok, diff)
			}
		})
	}
}

// TestEndedRingForgetsOverwritten: a note the ring overwrites is
// forgotten, unless its id was noted again since (the newer note answers
// until it is overwritten in turn); an id never noted is not remembered
// in a full ring.
func TestEndedRingForgetsOverwritten(t *testing.T) {
	id, first, second := uuid.New(), uuid.New(), uuid.New()
	type result struct {
		Root uuid.UUID
		OK   bool
	}
	tests := []struct {
		name  string
		after int // other threads noted after id's notes
		twice bool
		want  result
	}{
		{"kept until overwritten", endedRemembered - 1, false, result{first, true}},
		{"forgotten once overwritten", endedRemembered, false, result{}},
		{"the older note overwritten, the newer kept", endedRemembered - 1, true, result{second, true}},
		{"both notes overwritten", endedRemembered, true, result{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e endedRing
			e.note(id, first)
			if tc.twice {
				e.note(id, second)
			}
			for range tc.after {
				e.note(uuid.New(), uuid.New())
			}
			var got result
			got.Root, got.OK = e.rootOf(id)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rootOf (-want +got):\n%s", diff)
			}
			if _, ok := e.rootOf(uuid.New()); ok {
				t.Error("rootOf(an id never noted) remembered")
			}
			if n := len(e.newest); n > endedRemembered {
				t.Errorf("index holds %d ids, more than the ring's %d", n, endedRemembered)
			}
		})
	}
}

// BenchmarkEndedRootMiss measures EndedRoot of a thread id that never
// ended (a client-chosen new id) once its shard's ring is full: the lookup
// every message naming a new client-chosen thread makes.
func BenchmarkEndedRootMiss(b *testing.B) {
	th := NewThreads(ThreadsConfig{})
	root := uuid.NewString()
	if err := th.Begin(root, "client", "a"); err != nil {
		b.Fatal(err)
	}
	for range endedRemembered * threadShards {
		child, err := th.Extend(root, "b")
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := th.Prune(child); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, ok := th.EndedRoot(ids[i%len(ids)]); ok {
			b.Fatal("a new id remembered as ended")
		}
		i++
	}
}
