package stage

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewThreadIDTimeOrdered: fresh thread ids are valid thread ids, unique,
// and begin with the time they were minted (Unix microseconds modulo 2^32),
// so an id minted later in the cycle sorts after.
func TestNewThreadIDTimeOrdered(t *testing.T) {
	seen := map[string]bool{}
	prev, prevUs := "", uint32(0)
	for range 2000 {
		before := uint32(time.Now().UnixMicro())
		id := NewThreadID()
		after := uint32(time.Now().UnixMicro())
		if !IsThreadID(id) {
			t.Fatalf("NewThreadID() = %q, not a thread id", id)
		}
		if seen[id] {
			t.Fatalf("NewThreadID() repeated %s", id)
		}
		seen[id] = true
		u := uuid.MustParse(id)
		us := binary.BigEndian.Uint32(u[:4])
		if us-before > after-before { // modulo 2^32: us is within [before, after]
			t.Fatalf("id %s carries %d us, minted between %d and %d", id, us, before, after)
		}
		if prev != "" && us > prevUs && id <= prev { // a microsecond later, in the same cycle
			t.Fatalf("id %s minted after %s sorts before it", id, prev)
		}
		prev, prevUs = id, us
	}
}

// TestTimeOrderedKeepsVersion: the time goes into the first four bytes
// only; the version, variant and the other random bytes stay.
func TestTimeOrderedKeepsVersion(t *testing.T) {
	in := uuid.New()
	at := time.UnixMicro(0x7_0123_4567)
	out := TimeOrdered(in, at)
	if got := out.String()[:9]; got != "01234567-" {
		t.Errorf("time prefix = %s, want 01234567-", got)
	}
	if out.Version() != 4 || out.Variant() != uuid.RFC4122 || [12]byte(out[4:]) != [12]byte(in[4:]) {
		t.Errorf("TimeOrdered(%s) = %s: version, variant or random bytes changed", in, out)
	}
}
