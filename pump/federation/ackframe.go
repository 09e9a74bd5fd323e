package federation

import (
	"encoding/json"
	"fmt"
)

// An acknowledgement is the frame a link carries most — one per envelope,
// each way — and always the same JSON: {"type":"ack","id":"<link id>"}.
// Its encoding and decoding skip encoding/json's reflection for that exact
// form; any other frame, or an ack with other fields or another spelling
// (whitespace, escapes, key case, which encoding/json accepts), goes
// through encoding/json, so the result is the same either way.
const (
	ackHead = `{"type":"ack","id":"`
	ackTail = `"}`
)

// plainID reports whether id is written in JSON as it is (no escape, no
// byte encoding/json would change): the link ids this side makes (UUIDs)
// and any other of letters, digits, '-', '_' and '.'.
func plainID[T string | []byte](id T) bool {
	if len(id) == 0 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// decodeFrame decodes a text frame of the link.
func decodeFrame(b []byte) (frame, error) {
	if n := len(b) - len(ackTail); n > len(ackHead) && string(b[:len(ackHead)]) == ackHead &&
		string(b[n:]) == ackTail && plainID(b[len(ackHead):n]) {
		return frame{Type: frameAck, ID: string(b[len(ackHead):n])}, nil
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("decode frame: %w", err)
	}
	return f, nil
}

// marshal encodes f as the link's JSON text frame.
func (f frame) marshal() []byte {
	if f == (frame{Type: frameAck, ID: f.ID}) && plainID(f.ID) {
		b := make([]byte, 0, len(ackHead)+len(f.ID)+len(ackTail))
		return append(append(append(b, ackHead...), f.ID...), ackTail...)
	}
	b, _ := json.Marshal(f) // a struct of strings and a bool cannot fail
	return b
}
