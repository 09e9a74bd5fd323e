package store

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestExpiries: expiry rows are upserted by thread, survive a reopen
// exactly, go with DeleteExpiry — a delete followed by a put in one batch
// leaves the put, as a history evicted again leaves a new note — and bad
// rows are refused.
func TestExpiries(t *testing.T) {
	s, dir := openTest(t, Options{})
	at := time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC)
	ttl := ExpiryRow{Thread: "t1", Reason: "ttl", LastActive: at, Removed: at.Add(25 * time.Hour), TTL: 24 * time.Hour}
	evicted := ExpiryRow{Thread: "t2", Reason: "evicted", LastActive: at, Removed: at.Add(time.Minute), MaxThreads: 1000}
	gone := ExpiryRow{Thread: "t3", Reason: "ttl", Removed: at, TTL: time.Hour}
	must(t, s.PutExpiry(ttl))
	must(t, s.PutExpiry(gone))
	must(t, s.PutExpiry(ExpiryRow{Thread: "t2", Reason: "ttl", Removed: at}))
	flush(t, s)
	must(t, s.DeleteExpiry("t3"))
	must(t, s.DeleteExpiry("t2"))
	must(t, s.PutExpiry(evicted))
	flush(t, s)
	want := []ExpiryRow{ttl, evicted}
	got, err := s.LoadExpiries()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LoadExpiries (-want +got):\n%s", d)
	}
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	got, err = s.LoadExpiries()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after reopen (-want +got):\n%s", d)
	}
	for _, bad := range []ExpiryRow{{Reason: "ttl"}, {Thread: "t", Reason: "lost"}, {Thread: "t"}} {
		if err := s.PutExpiry(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutExpiry(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}
