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
	h := sha256.New()
	for _, f := range append([]string{kind}, fields...) {
		var n [4]byte
		n[0], n[1], n[2], n[3] = byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}
