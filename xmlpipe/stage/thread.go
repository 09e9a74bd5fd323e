package stage

import "github.com/google/uuid"

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

// NewThreadID returns a fresh lower-case UUID v4.
func NewThreadID() string { return uuid.NewString() }

// init turns on the uuid package's pool of crypto/rand bytes: thread ids are
// minted on every hop, and reading 16 random bytes at a time costs a system
// call and an allocation each. The pool still draws from crypto/rand.
func init() { uuid.EnableRandPool() }
