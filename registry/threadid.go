package registry

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ErrInvalidThreadID is returned when a thread id is not a lower-case,
// canonical (8-4-4-4-12) RFC 4122 version 4 UUID.
var ErrInvalidThreadID = errors.New("invalid thread id (want a lower-case UUID v4)")

// parseThreadID parses a thread id in its only accepted wire form: 36
// lower-case hex characters and dashes, version 4, RFC 4122 variant.
func parseThreadID(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.UUID{}, ErrInvalidThreadID
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'F' {
			return uuid.UUID{}, ErrInvalidThreadID
		}
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("%w: %w", ErrInvalidThreadID, err)
	}
	if u.Version() != 4 || u.Variant() != uuid.RFC4122 {
		return uuid.UUID{}, ErrInvalidThreadID
	}
	return u, nil
}

// ValidThreadID reports whether s is a thread id in the wire form the
// registry accepts: a lower-case, canonical UUID version 4.
func ValidThreadID(s string) bool {
	_, err := parseThreadID(s)
	return err == nil
}
