package stage

import (
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// IsThreadID reports whether s is a canonical lower-case, hyphenated RFC 4122
// version-4 UUID — the only thread id form the pump accepts (as the reference's
// thread_assignment_step).
func IsThreadID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	if s[14] != '4' {
		return false
	}
	switch s[19] {
	case '8', '9', 'a', 'b':
		return true
	}
	return false
}

// NewThreadID returns a fresh lower-case UUID v4 whose first eight hex
// digits are the time (TimeOrdered): ids minted together sort together.
func NewThreadID() string { return TimeOrdered(uuid.New(), time.Now()).String() }

// TimeOrdered returns the version 4 UUID id with its first four bytes
// replaced by at in Unix microseconds modulo 2^32 (big-endian; it wraps
// every 71.6 minutes). The version and variant bits, further on, are
// untouched, so the id stays a valid thread id, with 90 random bits:
// unique and unguessable. Ids minted close in time are close in sort
// order, so a durable organism's rows keyed by thread id (threads, slots)
// are written side by side where the index is growing instead of on one
// random page each — a page written to the WAL per thread, most of the
// bus's store cost. The first eight hex digits, which the console shows
// for a thread, still differ between any two ids minted less than 71
// minutes apart but not in the same microsecond. An id reveals, to whoever holds it, when in its 71-minute
// cycle it was minted.
func TimeOrdered(id uuid.UUID, at time.Time) uuid.UUID {
	binary.BigEndian.PutUint32(id[:4], uint32(at.UnixMicro()))
	return id
}

// init turns on the uuid package's pool of crypto/rand bytes: thread ids are
// minted on every hop, and reading 16 random bytes at a time costs a system
// call and an allocation each. The pool still draws from crypto/rand.
func init() { uuid.EnableRandPool() }
