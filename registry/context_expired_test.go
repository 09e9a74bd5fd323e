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
	want := Expiry{Reason: ExpiredIdle, LastActive: last, Removed: now, TTL: time.Hour}
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

// TestExpiriesBounded: the notes are at most MaxNotes, oldest dropped.
func TestExpiriesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := NewContextBuffer(ContextConfig{TTL: time.Hour, MaxNotes: 3, Clock: func() time.Time { return now }})
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

// expirySinkLog records what an ExpirySink is told.
type expirySinkLog struct {
	noted   []ExpiryNote
	dropped []string
}

func (s *expirySinkLog) SlotAppended(Slot)           {}
func (s *expirySinkLog) ThreadDeleted(string)        {}
func (s *expirySinkLog) ExpiryNoted(n ExpiryNote)    { s.noted = append(s.noted, n) }
func (s *expirySinkLog) ExpiryDropped(thread string) { s.dropped = append(s.dropped, thread) }

// conversationSlot is the first slot of a conversation an outside party
// begins with an agent, the kind of history the pump keeps.
func conversationSlot(thread string) Slot {
	return Slot{ThreadID: thread, From: "api:alice", To: "poet", OwnName: "poet", Raw: []byte("<a/>")}
}

// TestEvictionNotesExpiry: a conversation's history evicted to keep at most
// MaxThreads leaves a note saying so, which the history begun again
// carries; an evicted history KeepEnded would not keep leaves none. The
// sink is told of the note, and of its end with the history begun again.
func TestEvictionNotesExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sink := &expirySinkLog{}
	b, err := NewContextBuffer(ContextConfig{MaxThreads: 2, Clock: func() time.Time { return now }, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	b.KeepEnded(func(first Slot) bool { return first.OwnName != "" && first.From == "api:alice" })
	if _, err := b.Append(conversationSlot("conv")); err != nil {
		t.Fatal(err)
	}
	last := now
	b.ThreadsEnded([]string{"conv"}) // kept: evicted first
	now = now.Add(time.Minute)
	for _, id := range []string{"hop1", "hop2", "hop3"} {
		if _, err := b.Append(Slot{ThreadID: id, From: "poet", To: "shouter"}); err != nil {
			t.Fatal(err)
		}
	}
	want := Expiry{Reason: ExpiredEvicted, LastActive: last, Removed: now, MaxThreads: 2}
	if x, ok := b.PendingExpiry("conv"); !ok || !cmp.Equal(x, want) {
		t.Fatalf("PendingExpiry(conv) = %+v, %v; want %+v", x, ok, want)
	}
	if _, ok := b.ExpiredEarlier("hop1"); ok {
		t.Error("an evicted hop's history was noted")
	}
	if _, err := b.Append(conversationSlot("conv")); err != nil {
		t.Fatal(err)
	}
	tc, _ := b.Thread("conv")
	if x, ok := tc.Expired(); !ok || !cmp.Equal(x, want) {
		t.Errorf("history begun again: Expired = %+v, %v; want %+v", x, ok, want)
	}
	if _, ok := b.PendingExpiry("conv"); ok {
		t.Error("the note is still pending once the history began again")
	}
	if diff := cmp.Diff([]ExpiryNote{{ThreadID: "conv", Expiry: want}}, sink.noted); diff != "" {
		t.Errorf("noted (-want +got):\n%s", diff)
	}
	b.DeleteThread("conv")
	if diff := cmp.Diff([]string{"conv"}, sink.dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if _, ok := b.ExpiredEarlier("conv"); ok {
		t.Error("a note outlived the history it went with")
	}
}

// TestNotesExpire: a pending note is dropped by Collect once older than
// NoteTTL, and the sink told; at most MaxNotes wait, the oldest dropped.
func TestNotesExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sink := &expirySinkLog{}
	b, err := NewContextBuffer(ContextConfig{TTL: time.Hour, NoteTTL: 48 * time.Hour, MaxNotes: 2,
		Clock: func() time.Time { return now }, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := b.Append(Slot{ThreadID: id}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Hour)
		b.Collect()
	}
	if diff := cmp.Diff([]string{"a"}, sink.dropped); diff != "" {
		t.Errorf("dropped beyond MaxNotes (-want +got):\n%s", diff)
	}
	now = now.Add(47 * time.Hour) // b removed 49h ago, c 47h ago
	b.Collect()
	if diff := cmp.Diff([]string{"a", "b"}, sink.dropped); diff != "" {
		t.Errorf("dropped once older than NoteTTL (-want +got):\n%s", diff)
	}
	for id, want := range map[string]bool{"a": false, "b": false, "c": true} {
		if _, ok := b.PendingExpiry(id); ok != want {
			t.Errorf("PendingExpiry(%s) = %v, want %v", id, ok, want)
		}
	}
}

// TestRestoreExpiries: restored notes go with the restored history of
// their thread, or wait for it to begin again; beyond MaxNotes the
// oldest waiting are dropped, and the sink told.
func TestRestoreExpiries(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sink := &expirySinkLog{}
	b, err := NewContextBuffer(ContextConfig{MaxThreads: 2, MaxNotes: 2, Clock: func() time.Time { return now }, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore([]Slot{{ThreadID: "live", Index: 0, Time: now}}); err != nil {
		t.Fatal(err)
	}
	note := func(id string, ago time.Duration) ExpiryNote {
		return ExpiryNote{ThreadID: id, Expiry: Expiry{Reason: ExpiredIdle, Removed: now.Add(-ago), TTL: time.Hour}}
	}
	notes := []ExpiryNote{note("live", time.Hour), note("old", 3*time.Hour), note("p1", 2*time.Hour), note("p2", time.Minute)}
	b.RestoreExpiries(notes)
	tc, _ := b.Thread("live")
	if x, ok := tc.Expired(); !ok || !cmp.Equal(x, notes[0].Expiry) {
		t.Errorf("live: Expired = %+v, %v; want %+v", x, ok, notes[0].Expiry)
	}
	for id, want := range map[string]bool{"live": false, "old": false, "p1": true, "p2": true} {
		if _, ok := b.PendingExpiry(id); ok != want {
			t.Errorf("PendingExpiry(%s) = %v, want %v", id, ok, want)
		}
	}
	if diff := cmp.Diff([]string{"old"}, sink.dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if len(sink.noted) != 0 {
		t.Errorf("restored notes told to the sink: %v", sink.noted)
	}
}

// TestNoteKeptAcrossItsOwnEviction: a history begun again while MaxNotes
// notes wait evicts another, whose note would drop the oldest waiting —
// it must not be the note of the history being begun.
func TestNoteKeptAcrossItsOwnEviction(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := NewContextBuffer(ContextConfig{MaxThreads: 2, MaxNotes: 2, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	b.KeepEnded(func(first Slot) bool { return first.OwnName != "" })
	for _, id := range []string{"conv", "o1", "o2", "o3"} { // o2 evicts conv, o3 evicts o1
		if _, err := b.Append(conversationSlot(id)); err != nil {
			t.Fatal(err)
		}
		b.ThreadsEnded([]string{id})
		now = now.Add(time.Minute)
	}
	if _, ok := b.PendingExpiry("conv"); !ok {
		t.Fatal("conv's note is not pending")
	}
	if _, err := b.Append(conversationSlot("conv")); err != nil { // evicts o2: a third note
		t.Fatal(err)
	}
	tc, _ := b.Thread("conv")
	if _, ok := tc.Expired(); !ok {
		t.Error("the history begun again lost its note to the eviction it made")
	}
}
