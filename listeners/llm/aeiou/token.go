package aeiou

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// The wire form of a control token (§6.2, §7):
//
//	<<<NSMAG:V3:{KIND}:{B64URL(PAYLOAD)}.{B64URL(TAG)}>>>
//
// B64URL is base64url without padding, decoded strictly (the unused low bits
// of the last character must be zero, so each byte string has exactly one
// spelling). PAYLOAD is the JCS form of the claims. TAG is computed over the
// ASCII signing input "NSMAG:V3:{KIND}:{B64URL(PAYLOAD)}" — the token
// without its angle brackets and tag — so the kind in the header is covered
// as well as the payload.
const (
	// TokenPrefix opens every token.
	TokenPrefix = "<<<NSMAG:V3:"
	// TokenSuffix closes every token.
	TokenSuffix = ">>>"
	// MaxTokenBytes bounds a whole token (§6.2).
	MaxTokenBytes = 1024
	// KindLoop is the one kind v3 defines (§5.2).
	KindLoop = "LOOP"
	// Version is the payload's "v".
	Version = 3
	// MaxSessionIDBytes bounds a session id (it travels in every token).
	MaxSessionIDBytes = 128
	// MaxJTIBytes bounds a jti.
	MaxJTIBytes = 64
)

// b64 is the token's base64url: no padding, strict.
var b64 = base64.RawURLEncoding.Strict()

// Action is a LOOP token's payload.action.
type Action string

// The three actions, in increasing precedence (§5.3).
const (
	ActionContinue Action = "continue"
	ActionDone     Action = "done"
	ActionAbort    Action = "abort"
)

// rank orders actions for precedence: abort > done > continue; 0 is not an
// action.
func (a Action) rank() int {
	switch a {
	case ActionContinue:
		return 1
	case ActionDone:
		return 2
	case ActionAbort:
		return 3
	}
	return 0
}

// Turn is what a token is bound to (§6.5): the session (the conversation),
// the turn's index in it and the turn's fresh nonce. Start, when set, is when
// the turn began (the decision log's latency is measured from it).
type Turn struct {
	SessionID string
	Index     int64
	Nonce     string
	Start     time.Time
}

// NewTurn returns turn index of session sid with a fresh 128-bit nonce from
// crypto/rand, started at start.
func NewTurn(sid string, index int64, start time.Time) (Turn, error) {
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return Turn{}, fmt.Errorf("%w: nonce: %v", ErrTurn, err)
	}
	t := Turn{SessionID: sid, Index: index, Nonce: b64.EncodeToString(n[:]), Start: start}
	return t, t.Validate()
}

// Validate checks the turn: a session id of 1–128 bytes of UTF-8, an index
// in 0…2^53−1, a nonce that is base64url of exactly 16 bytes.
func (t Turn) Validate() error {
	switch {
	case t.SessionID == "" || len(t.SessionID) > MaxSessionIDBytes || !utf8.ValidString(t.SessionID):
		return fmt.Errorf("%w: session id must be 1-%d bytes of UTF-8", ErrTurn, MaxSessionIDBytes)
	case t.Index < 0 || t.Index > MaxInteger:
		return fmt.Errorf("%w: turn index %d out of range", ErrTurn, t.Index)
	case !validNonce(t.Nonce):
		return fmt.Errorf("%w: nonce %q is not base64url of 128 bits", ErrTurn, t.Nonce)
	}
	return nil
}

func validNonce(s string) bool {
	n, err := b64.DecodeString(s)
	return err == nil && len(n) == 16
}

// Claims are a token's payload (§6.3).
type Claims struct {
	// Version is "v" (3).
	Version int64
	// Kind is "kind" (LOOP); it equals the header's KIND.
	Kind string
	// JTI is the token's unique id ("jti"), a UUID v4.
	JTI string
	// SessionID, TurnIndex and TurnNonce bind the token to one turn.
	SessionID string
	TurnIndex int64
	TurnNonce string
	// IssuedAt is Unix seconds; TTL is seconds: valid while
	// now ≤ IssuedAt + TTL.
	IssuedAt int64
	TTL      int64
	// KeyID is "kid": the key that tagged the token.
	KeyID string
	// Action, Request and Telemetry are "payload": the action and the
	// model's request and telemetry objects (strings, integers, booleans,
	// null, arrays and objects of them).
	Action    Action
	Request   map[string]any
	Telemetry map[string]any
}

// Expires is when the token stops verifying (the last valid second).
func (c Claims) Expires() time.Time { return time.Unix(c.IssuedAt+c.TTL, 0) }

// object returns the claims as the §6.3 JSON object.
func (c Claims) object() map[string]any {
	req, tel := c.Request, c.Telemetry
	if req == nil {
		req = map[string]any{}
	}
	if tel == nil {
		tel = map[string]any{}
	}
	return map[string]any{
		"v":          c.Version,
		"kind":       c.Kind,
		"jti":        c.JTI,
		"session_id": c.SessionID,
		"turn_index": c.TurnIndex,
		"turn_nonce": c.TurnNonce,
		"issued_at":  c.IssuedAt,
		"ttl":        c.TTL,
		"kid":        c.KeyID,
		"payload": map[string]any{
			"action":    string(c.Action),
			"request":   req,
			"telemetry": tel,
		},
	}
}

// signingInput is what a tag covers.
func signingInput(kind string, payload64 string) []byte {
	return []byte("NSMAG:V3:" + kind + ":" + payload64)
}

// encodeToken serialises c (whose KeyID must be s's) and tags it with s. It
// does not check MaxTokenBytes (the Minter does).
func encodeToken(c Claims, s Signer) (string, error) {
	payload, err := MarshalCanonical(c.object())
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	p64 := b64.EncodeToString(payload)
	tag, err := s.Sign(signingInput(c.Kind, p64))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrSigner, s.KeyID(), err)
	}
	if len(tag) == 0 {
		return "", fmt.Errorf("%w: %s: empty tag", ErrSigner, s.KeyID())
	}
	return TokenPrefix + c.Kind + ":" + p64 + "." + b64.EncodeToString(tag) + TokenSuffix, nil
}

// wireToken is a token split into its parts (syntax only).
type wireToken struct {
	kind, payload64, tag64 string
}

// splitToken checks s against the TOKEN rule of §7 and splits it.
func splitToken(s string) (wireToken, *VerifyError) {
	if len(s) > MaxTokenBytes {
		return wireToken{}, verifyErr(ReasonOversize, "%d bytes", len(s))
	}
	if !strings.HasPrefix(s, TokenPrefix) || !strings.HasSuffix(s, TokenSuffix) || len(s) < len(TokenPrefix)+len(TokenSuffix) {
		return wireToken{}, verifyErr(ReasonMalformed, "not <<<NSMAG:V3:…>>>")
	}
	body := s[len(TokenPrefix) : len(s)-len(TokenSuffix)]
	kind, rest, ok := strings.Cut(body, ":")
	if !ok || kind == "" || !allBytes(kind, isKindByte) {
		return wireToken{}, verifyErr(ReasonMalformed, "bad KIND")
	}
	p64, t64, ok := strings.Cut(rest, ".")
	if !ok || p64 == "" || t64 == "" || !allBytes(p64, isB64Byte) || !allBytes(t64, isB64Byte) {
		return wireToken{}, verifyErr(ReasonMalformed, "bad base64url parts")
	}
	return wireToken{kind: kind, payload64: p64, tag64: t64}, nil
}

// IsTokenSyntax reports whether s matches §7's TOKEN rule (and the size
// bound); it says nothing of whether s verifies.
func IsTokenSyntax(s string) bool {
	_, err := splitToken(s)
	return err == nil
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isKindByte(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' }

func isB64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// decodeClaims parses and checks a payload: JCS-parsable (no floats, no
// duplicate keys), canonical, the §6.3 fields with their types; unknown
// fields are ignored (§12).
func decodeClaims(payload []byte) (Claims, *VerifyError) {
	v, err := ParseJSON(payload)
	if err != nil {
		return Claims{}, &VerifyError{Reason: ReasonBadPayload, Err: err}
	}
	canon, err := MarshalCanonical(v)
	if err != nil {
		return Claims{}, &VerifyError{Reason: ReasonBadPayload, Err: err}
	}
	if !bytes.Equal(canon, payload) {
		return Claims{}, verifyErr(ReasonNonCanonical, "payload is not in JCS form")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Claims{}, verifyErr(ReasonBadPayload, "payload is not an object")
	}
	var c Claims
	var bad []string
	str := func(key string, max int) string {
		s, ok := m[key].(string)
		if !ok || s == "" || len(s) > max {
			bad = append(bad, key)
		}
		return s
	}
	num := func(key string) int64 {
		n, ok := m[key].(int64)
		if !ok {
			bad = append(bad, key)
		}
		return n
	}
	c.Version = num("v")
	c.Kind = str("kind", 64)
	c.JTI = str("jti", MaxJTIBytes)
	c.SessionID = str("session_id", MaxSessionIDBytes)
	c.TurnIndex = num("turn_index")
	c.TurnNonce = str("turn_nonce", 64)
	c.IssuedAt = num("issued_at")
	c.TTL = num("ttl")
	c.KeyID = str("kid", 64)
	p, ok := m["payload"].(map[string]any)
	if !ok {
		bad = append(bad, "payload")
	} else {
		a, _ := p["action"].(string)
		c.Action = Action(a)
		if c.Request, ok = objectField(p, "request"); !ok {
			bad = append(bad, "payload.request")
		}
		if c.Telemetry, ok = objectField(p, "telemetry"); !ok {
			bad = append(bad, "payload.telemetry")
		}
	}
	if len(bad) > 0 {
		return Claims{}, verifyErr(ReasonBadClaims, "missing or mistyped: %s", strings.Join(bad, ", "))
	}
	return c, nil
}

// objectField returns m[key] as an object; absent is an empty object.
func objectField(m map[string]any, key string) (map[string]any, bool) {
	v, present := m[key]
	if !present {
		return map[string]any{}, true
	}
	o, ok := v.(map[string]any)
	return o, ok
}

// newJTI returns a random UUID v4 read from r.
func newJTI(r io.Reader) (string, error) {
	var u [16]byte
	if _, err := io.ReadFull(r, u[:]); err != nil {
		return "", err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}
