package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// messageIDByHasher is MessageID written with a streaming hasher: the
// definition the faster MessageID must keep giving.
func messageIDByHasher(kind string, fields ...string) string {
	h := sha256.New()
	for _, f := range append([]string{kind}, fields...) {
		var n [4]byte
		n[0], n[1], n[2], n[3] = byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestMessageIDStable(t *testing.T) {
	long := strings.Repeat("x", 1000)
	for _, fields := range [][]string{
		{TypeOutput},
		{TypeOutput, "conv", "thread", "shouter", "HELLO, DAN!"},
		{TypeComplete, ""},
		{TypeOutput, "a", "bc"},
		{TypeOutput, "ab", "c"},
		{TypeOutput, long, long},
	} {
		if got, want := MessageID(fields[0], fields[1:]...), messageIDByHasher(fields[0], fields[1:]...); got != want {
			t.Errorf("MessageID(%.40q) = %s, want %s", fields, got, want)
		}
	}
	if MessageID(TypeOutput, "a", "bc") == MessageID(TypeOutput, "ab", "c") {
		t.Error("length prefixes do not separate the fields")
	}
	n := testing.AllocsPerRun(100, func() { _ = MessageID(TypeOutput, "conv", "thread", "shouter", "HELLO, DAN!") })
	if n > 1 {
		t.Errorf("MessageID: %v allocations, want 1 (the string)", n)
	}
}
