package registry

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// TestHopsEnteredCountOnAndSurviveRestore: a conversation a peer
// organism's call begins (JoinAsAt) counts its hops from those its caller
// had made, in every thread extended from it; its records carry them and
// a restored registry counts the same, while a hop count out of range is
// refused, as a record and as a join.
func TestHopsEnteredCountOnAndSurviveRestore(t *testing.T) {
	r := NewThreads(ThreadsConfig{Organism: "b"})
	root := uuid.NewString()
	if _, _, _, err := r.JoinAsAt(root, "a", "ping", "", 6); err != nil {
		t.Fatal(err)
	}
	child, err := r.Extend(root, "pong")
	if err != nil {
		t.Fatal(err)
	}
	local := uuid.NewString()
	if _, _, _, err := r.JoinAsAt(local, "console", "ping", "", 0); err != nil {
		t.Fatal(err)
	}
	hops := func(r *Threads) map[string]int {
		out := map[string]int{}
		for _, id := range []string{root, child, local} {
			n, ok := r.Hops(id)
			if !ok {
				t.Fatalf("thread %s not live", id)
			}
			out[id] = n
		}
		return out
	}
	want := map[string]int{root: 7, child: 8, local: 1}
	if d := cmp.Diff(want, hops(r)); d != "" {
		t.Errorf("hops (-want +got):\n%s", d)
	}
	// A live thread keeps its own count.
	if _, created, _, err := r.JoinAsAt(root, "a", "ping", "", 100); err != nil || created {
		t.Fatalf("joining the live root again: created %v, %v", created, err)
	}
	recs := r.Records()
	restored := NewThreads(ThreadsConfig{Organism: "b"})
	if err := restored.Restore(recs); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, hops(restored)); d != "" {
		t.Errorf("hops after a restore (-want +got):\n%s", d)
	}
	if n, ok := restored.Hops(uuid.NewString()); ok || n != 0 {
		t.Errorf("an unknown thread: %d hops, live %v", n, ok)
	}

	for _, bad := range []int{-1, MaxEnteredHops + 1} {
		if _, _, _, err := r.JoinAsAt(uuid.NewString(), "a", "ping", "", bad); !errors.Is(err, ErrBadHops) {
			t.Errorf("joining at %d hops: %v, want ErrBadHops", bad, err)
		}
		rec := ThreadRecord{ID: uuid.NewString(), Path: []string{"b", "a", "ping"}, Hops: bad}
		if err := NewThreads(ThreadsConfig{}).Restore([]ThreadRecord{rec}); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("restoring a record at %d hops: %v, want ErrInvalidRecord", bad, err)
		}
	}
}
