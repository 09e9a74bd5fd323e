package registry

import (
	"encoding/binary"
	"encoding/hex"
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

// timeOrdered returns the version 4 UUID id with its first four bytes
// replaced by the time now (Unix nanoseconds) in microseconds modulo 2^32,
// big-endian: the layout of xmlpipe/stage.TimeOrdered, which mints
// conversation ids. A sub-thread's id then sorts by when it began, so a
// durable organism's rows keyed by thread id (threads, slots) are written
// where the index grows rather than on one random page each. The version
// and variant bits are untouched: the id stays a valid thread id, with 90
// random bits (87 past the shard bits), unique (Extend checks) and
// unguessable, and its first eight hex digits, which the console shows,
// differ from those of any thread begun less than 71 minutes apart but
// not in the same microsecond.
func timeOrdered(id uuid.UUID, now int64) uuid.UUID {
	binary.BigEndian.PutUint32(id[:4], uint32(now/1e3))
	return id
}

// formatThreadID writes id in its wire form (uuid.UUID.String's) into
// dst, without allocating: a map keyed by thread id can be looked up with
// string(dst[:]), which Go does not copy.
func formatThreadID(dst *[36]byte, id uuid.UUID) {
	hex.Encode(dst[0:8], id[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], id[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], id[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], id[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:36], id[10:16])
}
