package registry

import (
	"encoding/binary"
	"encoding/hex"
	"errors"

	"github.com/google/uuid"
)

// ErrInvalidThreadID is returned when a thread id is not a lower-case,
// canonical (8-4-4-4-12) RFC 4122 version 4 UUID.
var ErrInvalidThreadID = errors.New("invalid thread id (want a lower-case UUID v4)")

// parseThreadID parses a thread id in its only accepted wire form: 36
// lower-case hex characters and dashes, version 4, RFC 4122 variant. Every
// registry call taking a thread id parses it, so it is one pass over the
// bytes, not uuid.Parse's general one and a case check besides.
func parseThreadID(s string) (uuid.UUID, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return uuid.UUID{}, ErrInvalidThreadID
	}
	var (
		u   uuid.UUID
		bad byte
	)
	for i, x := range threadIDDigits {
		hi, lo := lowerHex[s[x]], lowerHex[s[x+1]]
		bad |= hi | lo
		u[i] = hi<<4 | lo
	}
	if bad == notHex || u[6]>>4 != 4 || u[8]&0xc0 != 0x80 { // not hex, not version 4, not RFC 4122
		return uuid.UUID{}, ErrInvalidThreadID
	}
	return u, nil
}

// threadIDDigits are the offsets of a thread id's 16 hex pairs.
var threadIDDigits = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// notHex marks a byte that is not a lower-case hex digit in lowerHex; its
// bits cover every digit's, so or-ing the values of a string's digits
// gives notHex exactly when one of them is not a digit.
const notHex = 0xff

// lowerHex maps a lower-case hex digit to its value, anything else to
// notHex.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		t[i] = notHex
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

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
