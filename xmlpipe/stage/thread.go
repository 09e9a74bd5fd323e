package stage

import (
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

// NewThreadID returns a fresh lower-case UUID v4 whose first 48 bits are
// the time in Unix milliseconds (TimeOrdered): ids minted together sort
// together.
func NewThreadID() string { return TimeOrdered(uuid.New(), time.Now()).String() }

// TimeOrdered returns the version 4 UUID id with its first six bytes
// replaced by at in Unix milliseconds (big-endian, the layout of UUID
// version 7's time field). The version and variant bits, further on, are
// untouched, so the id stays a valid thread id with 74 random bits: unique
// and unguessable. Ids minted close in time are close in sort order, so a
// durable organism's rows keyed by thread id (threads, slots) are written
// side by side on the last page of their index instead of one random page
// each — a page written to the WAL per thread, most of the bus's store
// cost. It reveals when the thread began, to whoever holds the id.
func TimeOrdered(id uuid.UUID, at time.Time) uuid.UUID {
	ms := uint64(at.UnixMilli())
	for i := 5; i >= 0; i-- {
		id[i] = byte(ms)
		ms >>= 8
	}
	return id
}

// init turns on the uuid package's pool of crypto/rand bytes: thread ids are
// minted on every hop, and reading 16 random bytes at a time costs a system
// call and an allocation each. The pool still draws from crypto/rand.
func init() { uuid.EnableRandPool() }
