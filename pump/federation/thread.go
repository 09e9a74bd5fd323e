package federation

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
)

// Fingerprint names a public key in logs and errors in the one form an
// operator also sees in `xmlpipe keys show` and the handshake refusals:
// keys.Fingerprint ("SHA256:" and the unpadded base64 of its SHA-256).
func Fingerprint(k []byte) string {
	return keys.Fingerprint(ed25519.PublicKey(k))
}

// derivedThread is the local conversation id of a call arriving on the link
// thread linkThread through gateway gw: a UUID v4 from an HMAC under the
// organism's own secret, so the same call (a resend) always maps to the same
// conversation — which the journal then knows — while the peer can neither
// choose nor predict the id.
func derivedThread(secret []byte, gw, linkThread string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("xmlpipe-federation-thread\x00" + gw + "\x00" + linkThread))
	return uuidV4(m.Sum(nil))
}

// uuidV4 formats the first 16 bytes of sum as a UUID v4 (what a thread id
// must be), setting its version and variant bits.
func uuidV4(sum []byte) string {
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
