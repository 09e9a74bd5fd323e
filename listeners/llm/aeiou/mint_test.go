package aeiou

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMintVerifyRoundTrip mints with random jtis and verifies each token
// once: the claims come back, the token is one line of at most 1024 bytes.
func TestMintVerifyRoundTrip(t *testing.T) {
	keys := testKeys(t)
	m, err := NewMinter(keys, Config{}, fixedClock(testNow), nil)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
	turn := testTurn()
	seen := map[string]bool{}
	for i, a := range []Action{ActionContinue, ActionDone, ActionAbort, ActionContinue} {
		r, err := m.Mint(turn, KindLoop, map[string]any{
			"action":    string(a),
			"request":   map[string]any{"next": "read file", "n": int64(i), "ok": true, "none": nil, "list": []any{"a", int64(1)}},
			"telemetry": map[string]any{"tokens": int64(1234)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Token) > MaxTokenBytes || strings.ContainsFunc(r.Token, func(r rune) bool { return r <= ' ' || r == '"' || r == '`' }) {
			t.Fatalf("token of %d bytes or with spaces/quotes: %q", len(r.Token), r.Token)
		}
		if seen[r.Claims.JTI] {
			t.Fatalf("jti %s minted twice", r.Claims.JTI)
		}
		seen[r.Claims.JTI] = true
		c, err := v.Verify(r.Token, turn)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if c.Action != a || c.KeyID != testPrimaryKID || c.TurnIndex != 12 || c.IssuedAt != testNow.Unix() || c.TTL != 120 || c.Request["next"] != "read file" || c.Telemetry["tokens"] != int64(1234) {
			t.Fatalf("claims %+v", c)
		}
		if _, err := v.Verify(r.Token, turn); !isReason(err, ReasonReplayed) {
			t.Fatalf("second Verify = %v, want jti_replayed", err)
		}
	}
}

func isReason(err error, r Reason) bool {
	var ve *VerifyError
	return errors.As(err, &ve) && ve.Reason == r && errors.Is(err, ErrInvalidToken)
}

// TestMintBadRequests covers the magic-tool calls a model can get wrong.
func TestMintBadRequests(t *testing.T) {
	m := testMinter(t, testKeys(t), fixedClock(testNow), 0)
	turn := testTurn()
	for _, tc := range []struct {
		name    string
		kind    string
		payload map[string]any
		err     error
	}{
		{"unknown kind", "STOP", map[string]any{"action": "done"}, ErrBadRequest},
		{"lower-case kind", "loop", map[string]any{"action": "done"}, ErrBadRequest},
		{"no action", KindLoop, map[string]any{}, ErrBadRequest},
		{"bad action", KindLoop, map[string]any{"action": "restart"}, ErrBadRequest},
		{"action not a string", KindLoop, map[string]any{"action": true}, ErrBadRequest},
		{"unknown key", KindLoop, map[string]any{"action": "done", "why": "x"}, ErrBadRequest},
		{"request not object", KindLoop, map[string]any{"action": "done", "request": "x"}, ErrBadRequest},
		{"telemetry not object", KindLoop, map[string]any{"action": "done", "telemetry": []any{}}, ErrBadRequest},
		{"float", KindLoop, map[string]any{"action": "done", "telemetry": map[string]any{"p": 0.5}}, ErrFloat},
		{"too large", KindLoop, map[string]any{"action": "done", "request": map[string]any{"text": strings.Repeat("x", 700)}}, ErrTokenTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Mint(turn, tc.kind, tc.payload)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Mint error = %v, want %v", err, tc.err)
			}
		})
	}
	bad := turn
	bad.Nonce = "short"
	if _, err := m.Mint(bad, KindLoop, map[string]any{"action": "done"}); !errors.Is(err, ErrTurn) {
		t.Fatalf("bad turn: %v", err)
	}
}

// TestCallTool covers the native tool's argument parsing.
func TestCallTool(t *testing.T) {
	m := testMinter(t, testKeys(t), fixedClock(testNow), 0)
	turn := testTurn()
	r, err := m.CallTool(turn, []byte(`{"kind":"LOOP","payload":{"action":"done","telemetry":{"steps":3}}}`))
	if err != nil || r.Claims.Action != ActionDone || r.Claims.Telemetry["steps"] != int64(3) {
		t.Fatalf("CallTool = %+v, %v", r, err)
	}
	for _, args := range []string{
		``, `[]`, `{"kind":"LOOP"}`, `{"payload":{"action":"done"}}`, `{"kind":1,"payload":{"action":"done"}}`,
		`{"kind":"LOOP","payload":"done"}`, `{"kind":"LOOP","payload":{"action":"done"},"x":1}`,
		`{"kind":"LOOP","payload":{"action":"done","telemetry":{"p":1.5}}}`, `{"kind":"LOOP","kind":"LOOP","payload":{"action":"done"}}`,
	} {
		if _, err := m.CallTool(turn, []byte(args)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("CallTool(%s) = %v, want ErrBadRequest", args, err)
		}
	}
	if !strings.Contains(ToolParameters, `"additionalProperties":false`) {
		t.Fatal("schema")
	}
	if _, err := ParseJSON([]byte(ToolParameters)); err != nil {
		t.Fatalf("ToolParameters is not JSON: %v", err)
	}
}

// panicSigner panics in Sign.
type panicSigner struct{ kid string }

func (p panicSigner) KeyID() string               { return p.kid }
func (p panicSigner) Sign([]byte) ([]byte, error) { panic("HSM driver crashed") }

// TestMintFallback checks §11.4: a failing (or panicking) primary yields an
// abort from the fallback key, which verifies; both failing is a
// *MintError wrapping ErrMagicInternal.
func TestMintFallback(t *testing.T) {
	for _, primary := range []Signer{failingSigner{kid: testPrimaryKID}, panicSigner{kid: testPrimaryKID}} {
		keys := testKeys(t)
		var c Counters
		m, err := NewMinter(keys, Config{}, fixedClock(testNow), &c)
		if err != nil {
			t.Fatal(err)
		}
		m.primary = primary
		turn := testTurn()
		r, err := m.Mint(turn, KindLoop, map[string]any{"action": "continue", "request": map[string]any{"x": "y"}})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Fallback || r.PrimaryErr == nil || !errors.Is(r.PrimaryErr, ErrSigner) || r.Claims.Action != ActionAbort || r.Claims.KeyID != testFallbackKID {
			t.Fatalf("fallback mint %+v", r)
		}
		if r.Claims.Telemetry["requested_action"] != "continue" || r.Claims.Telemetry["fallback"] != true {
			t.Fatalf("telemetry %+v", r.Claims.Telemetry)
		}
		v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
		if c, err := v.Verify(r.Token, turn); err != nil || c.Action != ActionAbort {
			t.Fatalf("fallback token: %+v, %v", c, err)
		}
		m.fallback = failingSigner{kid: testFallbackKID}
		_, err = m.Mint(turn, KindLoop, map[string]any{"action": "done"})
		var me *MintError
		if !errors.Is(err, ErrMagicInternal) || !errors.As(err, &me) || me.Primary == nil || me.Fallback == nil {
			t.Fatalf("both failing: %v", err)
		}
		s := c.Snapshot()
		if s.FallbackMints != 1 || s.MintFailures != 1 || s.Mints != 0 {
			t.Fatalf("counters %+v", s)
		}
	}
}

// TestKeyRotation checks §11.5: after Rotate the new key mints, the old
// key's tokens verify for MaxTTL + RotationBuffer and not after.
func TestKeyRotation(t *testing.T) {
	keys := testKeys(t)
	clock := &testClock{t: testNow}
	cfg := Config{TTL: 60 * time.Second, MaxTTL: 120 * time.Second, RotationBuffer: 30 * time.Second}
	m, err := NewMinter(keys, cfg, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(keys.Ring, NewReplayCache(0, 0), cfg, clock.Now)
	turn := testTurn()
	old := mustMint(t, m, turn, ActionContinue)
	next := testEd25519(t, "ed25519-test-next", "next")
	if err := m.Rotate(next, next.VerifyKey()); err != nil {
		t.Fatal(err)
	}
	if err := m.Rotate(next, next.VerifyKey()); !errors.Is(err, ErrKey) {
		t.Fatalf("re-adding a kid: %v", err)
	}
	fresh := mustMint(t, m, turn, ActionDone)
	if fresh.Claims.KeyID != "ed25519-test-next" || m.KeyID() != "ed25519-test-next" {
		t.Fatalf("after rotation minted under %s", fresh.Claims.KeyID)
	}
	// A token of the old key, minted just before rotation, verifies within
	// its TTL (well inside the grace).
	clock.Advance(59 * time.Second)
	if _, err := v.Verify(old.Token, turn); err != nil {
		t.Fatalf("old key inside grace: %v", err)
	}
	// A token the old key signed (as a retained copy could) stops verifying
	// once the grace (120 s + 30 s) is over.
	late := craftToken(t, KindLoop, mustCanonical(t, claimsFor(turn, testPrimaryKID, ActionDone, "late-jti", clock.Now().Unix())), testEd25519(t, testPrimaryKID, "primary"))
	clock.Advance(92 * time.Second) // 151 s after rotation
	if _, err := v.Verify(late, turn); !isReason(err, ReasonKeyRetired) {
		t.Fatalf("old key after grace: %v", err)
	}
	if n := keys.Ring.Prune(clock.Now()); n != 1 {
		t.Fatalf("Prune dropped %d keys", n)
	}
	if _, err := v.Verify(late, turn); !isReason(err, ReasonUnknownKey) {
		t.Fatalf("pruned key: %v", err)
	}
}

// TestKeys covers key constructors and generation.
func TestKeys(t *testing.T) {
	if _, err := NewEd25519Signer("bad kid", make([]byte, 64)); !errors.Is(err, ErrKey) {
		t.Fatal("kid with a space accepted")
	}
	if _, err := NewEd25519Signer("k", make([]byte, 10)); !errors.Is(err, ErrKey) {
		t.Fatal("short key accepted")
	}
	if _, err := NewHMACSigner("k", make([]byte, 31)); !errors.Is(err, ErrKey) {
		t.Fatal("short secret accepted")
	}
	if _, err := NewKeyRing(VerifyKey{ID: "k", Alg: "RS256", Secret: make([]byte, 32)}); !errors.Is(err, ErrKey) {
		t.Fatal("unknown alg accepted")
	}
	if _, err := NewKeyRing(VerifyKey{ID: "k", Alg: AlgEd25519, Public: make([]byte, 31)}); !errors.Is(err, ErrKey) {
		t.Fatal("short public key accepted")
	}
	p := testEd25519(t, "p", "p")
	if _, err := NewKeys(p, p.VerifyKey(), p, p.VerifyKey()); !errors.Is(err, ErrKey) {
		t.Fatal("one kid for primary and fallback accepted")
	}
	if _, err := NewKeys(p, testEd25519(t, "q", "q").VerifyKey(), testEd25519(t, "f", "f"), testEd25519(t, "f", "f").VerifyKey()); !errors.Is(err, ErrKey) {
		t.Fatal("mismatched primary kid accepted")
	}
	if err := testKeys(t).Ring.Retire("nope", testNow); !errors.Is(err, ErrKey) {
		t.Fatal("retiring an unknown kid")
	}
	k1, err := GenerateKeys(testNow)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := GenerateKeys(testNow)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k1.Primary.KeyID(), "ed25519-20250831-") || !strings.HasPrefix(k1.Fallback.KeyID(), "ed25519-fallback-20250831-") || k1.Primary.KeyID() == k2.Primary.KeyID() {
		t.Fatalf("kids %s %s %s", k1.Primary.KeyID(), k1.Fallback.KeyID(), k2.Primary.KeyID())
	}
	// Tokens of one run do not verify in another.
	m1, _ := NewMinter(k1, Config{}, fixedClock(testNow), nil)
	tok := mustMint(t, m1, testTurn(), ActionDone).Token
	v2 := NewVerifier(k2.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
	if _, err := v2.Verify(tok, testTurn()); !isReason(err, ReasonUnknownKey) {
		t.Fatalf("cross-run token: %v", err)
	}
	if _, err := NewMinter(&Keys{Ring: k1.Ring, Primary: k1.Primary}, Config{}, nil, nil); !errors.Is(err, ErrKey) {
		t.Fatal("minter without fallback")
	}
}

// TestConfigValidate covers Config.Validate.
func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []Config{
		{TTL: 500 * time.Millisecond},
		{TTL: 1500 * time.Millisecond},
		{TTL: 10 * time.Minute},
		{MaxTTL: 10 * time.Minute},
		{RotationBuffer: -time.Second},
		{MaxSkew: -time.Second},
		{ReplayCapacity: -1},
		{RepeatLimit: 1},
		{ReplayTTL: time.Minute},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate = %v, want ErrConfig", c, err)
		}
	}
}
