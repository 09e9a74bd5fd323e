package federation

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// callID is the link thread of the call that the handling of journaled
// message seq makes to capability remote through gateway gw — attempt n of
// it in this life of the organism (a handling interrupted before its
// answer whose call could not be held open for its next handling calls
// anew: holdCall) — in the state of the given epoch: a
// UUID v4 from an HMAC under the organism's secret.
//
// A message handled again after a crash (Recover) computes the same id, so
// a call that left before its record was durable is sent again under the
// id the peer already knows: the peer refuses the second copy (its
// received rows, by the conversation the id derives) and its answer comes
// back under that id. Two messages never share an id, even with the same
// payload on the same thread: each has its own journal seq. The epoch
// keeps apart the calls of a state created anew (a data directory removed)
// whose seqs start again from 1.
func callID(secret, epoch []byte, gw, remote string, seq int64, n int) string {
	m := hmac.New(sha256.New, secret)
	var num [16]byte
	binary.BigEndian.PutUint64(num[:8], uint64(seq))
	binary.BigEndian.PutUint64(num[8:], uint64(n))
	m.Write([]byte("xmlpipe-federation-call\x00"))
	m.Write(epoch)
	m.Write([]byte("\x00" + gw + "\x00" + remote + "\x00"))
	m.Write(num[:])
	return uuidV4(m.Sum(nil))
}
