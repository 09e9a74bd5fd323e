package registry

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCollectNotesExpiry: a history begun again on a thread whose earlier
// history Collect removed for the TTL says so; one that was deleted
// otherwise, or never existed, does not.
func TestCollectNotesExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	b, err := NewContextBuffer(ContextConfig{TTL: time.Hour, MaxThreads: 2, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old", "deleted"} {
		if _, err := b.Append(Slot{ThreadID: id, Raw: []byte("<a/>")}); err != nil {
			t.Fatal(err)
		}
	}
	b.DeleteThread("deleted")
	last := now
	now = now.Add(2 * time.Hour)
	if n := b.Collect(); n != 1 {
		t.Fatalf("Collect = %d, want 1", n)
	}
	want := Expiry{LastActive: last, Collected: now, TTL: time.Hour}
	if x, ok := b.ExpiredEarlier("old"); !ok || !cmp.Equal(x, want) {
		t.Fatalf("ExpiredEarlier(old) = %+v, %v; want %+v", x, ok, want)
	}
	for _, id := range []string{"old", "deleted", "new"} {
		if _, err := b.Append(Slot{ThreadID: id, Raw: []byte("<b/>")}); err != nil {
			t.Fatal(err)
		}
		tc, _ := b.Thread(id)
		x, ok := tc.Expired()
		if wantOK := id == "old"; ok != wantOK {
			t.Errorf("%s: Expired ok = %v, want %v", id, ok, wantOK)
		} else if ok {
			if diff := cmp.Diff(want, x); diff != "" {
				t.Errorf("%s: Expired (-want +got):\n%s", id, diff)
			}
		}
	}
}

// TestExpiriesBounded: the notes are at most MaxThreads, oldest dropped.
func TestExpiriesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := NewContextBuffer(ContextConfig{TTL: time.Hour, MaxThreads: 3, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		if _, err := b.Append(Slot{ThreadID: id}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Hour)
		b.Collect()
	}
	var got []string
	for _, id := range ids {
		if _, ok := b.ExpiredEarlier(id); ok {
			got = append(got, id)
		}
	}
	if diff := cmp.Diff([]string{"c", "d", "e"}, got); diff != "" {
		t.Errorf("noted expiries (-want +got):\n%s", diff)
	}
}
