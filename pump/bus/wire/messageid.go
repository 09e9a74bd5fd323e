package wire

import (
	"crypto/sha256"
	"encoding/hex"
)

// EnvelopeID is the message_id of a frame about a journaled envelope: the
// hex SHA-256 of its canonical bytes, the journal's checksum and the REST
// API's message id. A message the organism handles again after a crash
// (the same envelope, re-delivered from the journal) has the same id.
func EnvelopeID(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// MessageID is the message_id of a frame without an envelope of its own (a
// printed line, a completion, a failure told to the client): the hex
// SHA-256 of its kind and identifying fields, each length-prefixed so no
// two field lists collide. A handler that runs again after a crash on the
// same thread and prints the same line produces the same id, so a client
// deduplicates by message_id whatever the frame.
func MessageID(kind string, fields ...string) string {
	var stack [256]byte
	b := appendLengthPrefixed(stack[:0], kind)
	for _, f := range fields {
		b = appendLengthPrefixed(b, f)
	}
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// appendLengthPrefixed appends f's length (4 bytes, big-endian) and f.
func appendLengthPrefixed(b []byte, f string) []byte {
	b = append(b, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
	return append(b, f...)
}
