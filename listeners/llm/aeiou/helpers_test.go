package aeiou

import (
	"crypto/ed25519"
	"crypto/sha256"
	"sync"
	"testing"
	"time"
)

// testNow is the fixed clock of the goldens: 2025-08-31T12:00:00Z.
var testNow = time.Unix(1756641600, 0)

// Fixed test key material (never use outside tests).
const (
	testPrimaryKID  = "ed25519-test-primary"
	testFallbackKID = "ed25519-test-fallback"
	testOtherKID    = "ed25519-test-other"
	testHMACKID     = "hs256-test"
)

// testSeed derives a fixed 32-byte seed from a label.
func testSeed(label string) []byte {
	s := sha256.Sum256([]byte("aeiou-v3 test key: " + label))
	return s[:]
}

func testEd25519(t testing.TB, kid, label string) *Ed25519Signer {
	t.Helper()
	s, err := NewEd25519Signer(kid, ed25519.NewKeyFromSeed(testSeed(label)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testHMAC(t testing.TB) *HMACSigner {
	t.Helper()
	s, err := NewHMACSigner(testHMACKID, testSeed("hs256"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testKeys returns the fixed primary and fallback keys, with the HS256 test
// key also in the ring.
func testKeys(t testing.TB) *Keys {
	t.Helper()
	p := testEd25519(t, testPrimaryKID, "primary")
	f := testEd25519(t, testFallbackKID, "fallback")
	k, err := NewKeys(p, p.VerifyKey(), f, f.VerifyKey())
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Ring.Add(testHMAC(t).VerifyKey()); err != nil {
		t.Fatal(err)
	}
	return k
}

// testTurn is the golden turn.
func testTurn() Turn {
	return Turn{
		SessionID: "3f6c2a9e-5b1d-4c8e-9a7f-2d4e6b8c0a1f",
		Index:     12,
		Nonce:     b64.EncodeToString([]byte("0123456789abcdef")),
		Start:     testNow.Add(-1500 * time.Millisecond),
	}
}

// seqReader yields bytes seed, seed+1, … (a deterministic jti source).
type seqReader struct{ next byte }

func (r *seqReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.next
		r.next++
	}
	return len(p), nil
}

// fixedClock returns a clock function stuck at t.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testMinter returns a minter over keys at clock now whose jtis come from
// seqReader{seed}.
func testMinter(t testing.TB, keys *Keys, now func() time.Time, seed byte) *Minter {
	t.Helper()
	m, err := NewMinter(keys, Config{}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.rand = &seqReader{next: seed}
	return m
}

func mustMint(t testing.TB, m *Minter, turn Turn, action Action) Minted {
	t.Helper()
	r, err := m.Mint(turn, KindLoop, map[string]any{"action": string(action)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// craftToken tags an arbitrary payload under an arbitrary header kind,
// bypassing every check of the minter (for hostile test tokens).
func craftToken(t testing.TB, kind string, payload []byte, s Signer) string {
	t.Helper()
	p64 := b64.EncodeToString(payload)
	tag, err := s.Sign(signingInput(kind, p64))
	if err != nil {
		t.Fatal(err)
	}
	return TokenPrefix + kind + ":" + p64 + "." + b64.EncodeToString(tag) + TokenSuffix
}

// claimsFor returns the claims object the minter would write for turn.
func claimsFor(turn Turn, kid string, action Action, jti string, issued int64) map[string]any {
	return Claims{
		Version: Version, Kind: KindLoop, JTI: jti,
		SessionID: turn.SessionID, TurnIndex: turn.Index, TurnNonce: turn.Nonce,
		IssuedAt: issued, TTL: 120, KeyID: kid, Action: action,
	}.object()
}

func mustCanonical(t testing.TB, v any) []byte {
	t.Helper()
	b, err := MarshalCanonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
