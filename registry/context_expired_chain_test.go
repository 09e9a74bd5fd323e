package registry

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRemovedTwiceKeepsBoth: a thread whose history expired, began again
// and was then evicted keeps both removals: the latest, and the earlier
// one with the seq of the message that began the history between them —
// in order, oldest first — pending and once begun again a third time.
func TestRemovedTwiceKeepsBoth(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := NewContextBuffer(ContextConfig{TTL: time.Hour, MaxThreads: 1, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(Slot{ThreadID: "conv", Seq: 1, Raw: []byte("<a/>")}); err != nil {
		t.Fatal(err)
	}
	first := now
	now = now.Add(2 * time.Hour)
	if n := b.Collect(); n != 1 {
		t.Fatalf("Collect = %d, want 1", n)
	}
	expired := now
	if _, err := b.Append(Slot{ThreadID: "conv", Seq: 7, Raw: []byte("<b/>")}); err != nil {
		t.Fatal(err)
	}
	begun := now
	now = now.Add(time.Minute)
	if _, err := b.Append(Slot{ThreadID: "other", Seq: 8, Raw: []byte("<c/>")}); err != nil { // evicts conv
		t.Fatal(err)
	}
	want := Expiry{Reason: ExpiredEvicted, LastActive: begun, Removed: now, MaxThreads: 1,
		Earlier: []Expiry{{Reason: ExpiredIdle, LastActive: first, Removed: expired, TTL: time.Hour, Since: 7}}}
	x, ok := b.ExpiredEarlier("conv")
	if !ok {
		t.Fatal("no note of the eviction")
	}
	if diff := cmp.Diff(want, x); diff != "" {
		t.Errorf("pending note (-want +got):\n%s", diff)
	}
	if _, err := b.Append(Slot{ThreadID: "conv", Seq: 9, Raw: []byte("<d/>")}); err != nil {
		t.Fatal(err)
	}
	tc, _ := b.Thread("conv")
	x, ok = tc.Expired()
	if diff := cmp.Diff(want, x); !ok || diff != "" {
		t.Errorf("note of the history begun again (ok %v; -want +got):\n%s", ok, diff)
	}
}
