package stage

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewThreadIDTimeOrdered: fresh thread ids are valid thread ids, unique,
// and begin with the time they were minted, so later ids sort after.
func TestNewThreadIDTimeOrdered(t *testing.T) {
	seen := map[string]bool{}
	prev, prevMs := "", uint64(0)
	for range 2000 {
		before := uint64(time.Now().UnixMilli())
		id := NewThreadID()
		after := uint64(time.Now().UnixMilli())
		if !IsThreadID(id) {
			t.Fatalf("NewThreadID() = %q, not a thread id", id)
		}
		if seen[id] {
			t.Fatalf("NewThreadID() repeated %s", id)
		}
		seen[id] = true
		u := uuid.MustParse(id)
		ms := uint64(0)
		for _, b := range u[:6] {
			ms = ms<<8 | uint64(b)
		}
		if ms < before || ms > after {
			t.Fatalf("id %s carries %d ms, minted between %d and %d", id, ms, before, after)
		}
		if ms > prevMs && id <= prev { // minted a millisecond later or more
			t.Fatalf("id %s minted after %s sorts before it", id, prev)
		}
		if ms > prevMs {
			prev, prevMs = id, ms
		}
	}
}

// TestTimeOrderedKeepsVersion: the time goes into the first six bytes only;
// the version, variant and the rest of the random bytes stay.
func TestTimeOrderedKeepsVersion(t *testing.T) {
	in := uuid.New()
	at := time.UnixMilli(0x0123456789ab)
	out := TimeOrdered(in, at)
	if got := out.String()[:13]; got != "01234567-89ab" {
		t.Errorf("time prefix = %s, want 01234567-89ab", got)
	}
	if out.Version() != 4 || out.Variant() != uuid.RFC4122 || [10]byte(out[6:]) != [10]byte(in[6:]) {
		t.Errorf("TimeOrdered(%s) = %s: version, variant or random bytes changed", in, out)
	}
}
