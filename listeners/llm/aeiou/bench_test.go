package aeiou

import (
	"strings"
	"testing"
)

func benchMint(b *testing.B, primary Signer) {
	keys := testKeys(b)
	m := testMinter(b, keys, fixedClock(testNow), 0)
	m.primary = primary
	turn := testTurn()
	payload := map[string]any{"action": "continue", "telemetry": map[string]any{"step": int64(3)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Mint(turn, KindLoop, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMint mints one Ed25519 token (JCS, base64url, signature, jti).
func BenchmarkMint(b *testing.B) { benchMint(b, testEd25519(b, testPrimaryKID, "primary")) }

// BenchmarkMintHS256 mints one HS256 token.
func BenchmarkMintHS256(b *testing.B) { benchMint(b, testHMAC(b)) }

// benchVerify verifies tokens in full, replay cache included: a pool of
// twice the cache's capacity cycles, so every jti has been evicted (LRU)
// before it comes round again.
func benchVerify(b *testing.B, primary Signer) {
	keys := testKeys(b)
	m, err := NewMinter(keys, Config{}, fixedClock(testNow), nil) // random jtis
	if err != nil {
		b.Fatal(err)
	}
	m.primary = primary
	turn := testTurn()
	const capacity = 1024
	pool := make([]string, 2*capacity)
	for i := range pool {
		pool[i] = mustMint(b, m, turn, ActionContinue).Token
	}
	v := NewVerifier(keys.Ring, NewReplayCache(0, capacity), Config{}, fixedClock(testNow))
	b.SetBytes(int64(len(pool[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := v.Verify(pool[i%len(pool)], turn); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkVerify verifies one Ed25519 token.
func BenchmarkVerify(b *testing.B) { benchVerify(b, testEd25519(b, testPrimaryKID, "primary")) }

// BenchmarkVerifyHS256 verifies one HS256 token.
func BenchmarkVerifyHS256(b *testing.B) { benchVerify(b, testHMAC(b)) }

// BenchmarkDecide decides a 4 KiB answer ending in an Ed25519 token.
func BenchmarkDecide(b *testing.B) {
	keys := testKeys(b)
	m, err := NewMinter(keys, Config{}, fixedClock(testNow), nil) // random jtis
	if err != nil {
		b.Fatal(err)
	}
	turn := testTurn()
	const capacity = 1024
	outputs := make([]string, 2*capacity)
	text := strings.Repeat("The build passed; next I will read the failing test's log.\n", 64)
	for i := range outputs {
		outputs[i] = text + mustMint(b, m, turn, ActionContinue).Token
	}
	v := NewVerifier(keys.Ring, NewReplayCache(0, capacity), Config{}, fixedClock(testNow))
	b.SetBytes(int64(len(outputs[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if d := v.Decide(turn, outputs[i%len(outputs)]); d.Outcome != OutcomeContinue {
			b.Fatal(d.Outcome)
		}
		i++
	}
}

// BenchmarkCanonicalize canonicalises a token-sized payload.
func BenchmarkCanonicalize(b *testing.B) {
	in := []byte(`{"v":3,"kind":"LOOP","jti":"7d1f6a52-3c4b-4e8d-9f0a-1b2c3d4e5f60","session_id":"3f6c2a9e-5b1d-4c8e-9a7f-2d4e6b8c0a1f","turn_index":12,"turn_nonce":"MDEyMzQ1Njc4OWFiY2RlZg","issued_at":1756641600,"ttl":120,"kid":"ed25519-test-primary","payload":{"action":"continue","request":{},"telemetry":{"step":3}}}`)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDigest computes the progress digest of a 4 KiB answer.
func BenchmarkDigest(b *testing.B) {
	out := strings.Repeat("The build passed; next I will read the failing test's log.  \r\n", 64)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		Digest(out, "")
	}
}

// BenchmarkParseEnvelope parses the golden envelope with all sections.
func BenchmarkParseEnvelope(b *testing.B) {
	in := readEnvelopeFile(b, "with_scratchpad_output.env")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEnvelope(in); err != nil {
			b.Fatal(err)
		}
	}
}
