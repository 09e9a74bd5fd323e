package envsig

import (
	"crypto/ed25519"
	"testing"
)

// BenchmarkSign signs the ~400-byte test envelope.
func BenchmarkSign(b *testing.B) {
	k := key(1)
	in := []byte(envelope)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(k, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify verifies the signed test envelope.
func BenchmarkVerify(b *testing.B) {
	k := key(1)
	pub := k.Public().(ed25519.PublicKey)
	signed := []byte(mustSign(b, k, envelope))
	b.SetBytes(int64(len(signed)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(pub, signed); err != nil {
			b.Fatal(err)
		}
	}
}
