package aeiou

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Alg is a tag algorithm (§6.4), selected by a token's kid.
type Alg string

// The two tag algorithms.
const (
	// AlgEd25519 is the default: an Ed25519 signature (RFC 8032), 64 bytes.
	AlgEd25519 Alg = "Ed25519"
	// AlgHS256 is HMAC-SHA-256 with a shared secret, 32 bytes: for a single
	// process, where minter and verifier share memory anyway.
	AlgHS256 Alg = "HS256"
)

// MinHMACSecret is the shortest HS256 secret accepted (256 bits).
const MinHMACSecret = 32

// Signer produces the tag of a token. The primary signer may be a remote key
// service that fails (the Minter then falls back, §11.4); Sign must be safe
// for concurrent use.
type Signer interface {
	// KeyID is the kid written into every token this signer tags.
	KeyID() string
	// Sign returns the tag of msg.
	Sign(msg []byte) ([]byte, error)
}

// VerifyKey is a key a Verifier checks tags with.
type VerifyKey struct {
	// ID is the kid: 1–64 characters of [A-Za-z0-9._-].
	ID string
	// Alg selects Public (Ed25519) or Secret (HS256).
	Alg    Alg
	Public ed25519.PublicKey
	Secret []byte
	// AbortOnly marks the fallback signer's key: a token it tags verifies
	// only with action abort (§11.4: the fallback exists to stop a loop,
	// never to keep one going).
	AbortOnly bool
	// NotAfter, when set, is the end of the key's rotation grace (§11.5):
	// tokens under this kid stop verifying after it.
	NotAfter time.Time
}

// validKeyID reports whether kid is 1–64 characters of [A-Za-z0-9._-].
func validKeyID(kid string) bool {
	if kid == "" || len(kid) > 64 {
		return false
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (k VerifyKey) validate() error {
	if !validKeyID(k.ID) {
		return fmt.Errorf("%w: kid %q is not 1-64 characters of [A-Za-z0-9._-]", ErrKey, k.ID)
	}
	switch k.Alg {
	case AlgEd25519:
		if len(k.Public) != ed25519.PublicKeySize {
			return fmt.Errorf("%w: %s: Ed25519 public key of %d bytes", ErrKey, k.ID, len(k.Public))
		}
	case AlgHS256:
		if len(k.Secret) < MinHMACSecret {
			return fmt.Errorf("%w: %s: HS256 secret of %d bytes (at least %d)", ErrKey, k.ID, len(k.Secret), MinHMACSecret)
		}
	default:
		return fmt.Errorf("%w: %s: unknown algorithm %q", ErrKey, k.ID, k.Alg)
	}
	return nil
}

// check reports whether tag is msg's tag under k.
func (k VerifyKey) check(msg, tag []byte) bool {
	switch k.Alg {
	case AlgEd25519:
		return len(tag) == ed25519.SignatureSize && ed25519.Verify(k.Public, msg, tag)
	case AlgHS256:
		m := hmac.New(sha256.New, k.Secret)
		m.Write(msg)
		return hmac.Equal(m.Sum(nil), tag)
	}
	return false
}

// KeyRing holds the keys tokens are verified with, by kid. It is safe for
// concurrent use; a Minter adds and retires keys in it as it rotates.
type KeyRing struct {
	mu   sync.RWMutex
	keys map[string]VerifyKey
}

// NewKeyRing returns a ring holding keys.
func NewKeyRing(keys ...VerifyKey) (*KeyRing, error) {
	r := &KeyRing{keys: map[string]VerifyKey{}}
	for _, k := range keys {
		if err := r.Add(k); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add adds a key; a kid already in the ring is ErrKey (a kid names one key
// for life, so a token can never verify under another key than its minter's).
func (r *KeyRing) Add(k VerifyKey) error {
	if err := k.validate(); err != nil {
		return err
	}
	k.Public = append(ed25519.PublicKey(nil), k.Public...)
	k.Secret = append([]byte(nil), k.Secret...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.keys[k.ID]; dup {
		return fmt.Errorf("%w: kid %q already in the ring", ErrKey, k.ID)
	}
	r.keys[k.ID] = k
	return nil
}

// Retire ends kid's validity at t (the end of its rotation grace). Retiring
// an unknown kid is ErrKey; an earlier retirement is kept if sooner.
func (r *KeyRing) Retire(kid string, t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.keys[kid]
	if !ok {
		return fmt.Errorf("%w: kid %q not in the ring", ErrKey, kid)
	}
	if k.NotAfter.IsZero() || t.Before(k.NotAfter) {
		k.NotAfter = t
		r.keys[kid] = k
	}
	return nil
}

// Prune drops the keys whose grace ended before now; it returns how many.
func (r *KeyRing) Prune(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, k := range r.keys {
		if !k.NotAfter.IsZero() && now.After(k.NotAfter) {
			delete(r.keys, id)
			n++
		}
	}
	return n
}

// lookup returns kid's key if it is valid at now.
func (r *KeyRing) lookup(kid string, now time.Time) (VerifyKey, Reason) {
	r.mu.RLock()
	k, ok := r.keys[kid]
	r.mu.RUnlock()
	switch {
	case !ok:
		return VerifyKey{}, ReasonUnknownKey
	case !k.NotAfter.IsZero() && now.After(k.NotAfter):
		return VerifyKey{}, ReasonKeyRetired
	}
	return k, ""
}

// Ed25519Signer signs in memory with an Ed25519 private key.
type Ed25519Signer struct {
	kid  string
	priv ed25519.PrivateKey
}

// NewEd25519Signer returns a signer for priv under kid.
func NewEd25519Signer(kid string, priv ed25519.PrivateKey) (*Ed25519Signer, error) {
	if !validKeyID(kid) {
		return nil, fmt.Errorf("%w: kid %q is not 1-64 characters of [A-Za-z0-9._-]", ErrKey, kid)
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: %s: Ed25519 private key of %d bytes", ErrKey, kid, len(priv))
	}
	return &Ed25519Signer{kid: kid, priv: append(ed25519.PrivateKey(nil), priv...)}, nil
}

// GenerateEd25519 returns a signer for a fresh Ed25519 key under kid.
func GenerateEd25519(kid string) (*Ed25519Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return NewEd25519Signer(kid, priv)
}

// KeyID implements Signer.
func (s *Ed25519Signer) KeyID() string { return s.kid }

// Sign implements Signer.
func (s *Ed25519Signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// VerifyKey returns the public half, for a KeyRing.
func (s *Ed25519Signer) VerifyKey() VerifyKey {
	return VerifyKey{ID: s.kid, Alg: AlgEd25519, Public: s.priv.Public().(ed25519.PublicKey)}
}

// HMACSigner tags with HMAC-SHA-256 (HS256).
type HMACSigner struct {
	kid    string
	secret []byte
}

// NewHMACSigner returns an HS256 signer; secret must be at least 32 bytes.
func NewHMACSigner(kid string, secret []byte) (*HMACSigner, error) {
	k := VerifyKey{ID: kid, Alg: AlgHS256, Secret: secret}
	if err := k.validate(); err != nil {
		return nil, err
	}
	return &HMACSigner{kid: kid, secret: append([]byte(nil), secret...)}, nil
}

// KeyID implements Signer.
func (s *HMACSigner) KeyID() string { return s.kid }

// Sign implements Signer.
func (s *HMACSigner) Sign(msg []byte) ([]byte, error) {
	m := hmac.New(sha256.New, s.secret)
	m.Write(msg)
	return m.Sum(nil), nil
}

// VerifyKey returns the key a KeyRing verifies this signer's tags with.
func (s *HMACSigner) VerifyKey() VerifyKey {
	return VerifyKey{ID: s.kid, Alg: AlgHS256, Secret: s.secret}
}

// Keys is the key material of one organism run: the ring verifiers use, the
// primary signer and the in-memory fallback signer (§11.4), whose key is in
// the ring marked AbortOnly.
type Keys struct {
	Ring     *KeyRing
	Primary  Signer
	Fallback Signer
}

// NewKeys assembles Keys from loaded signers and the keys that verify them
// (primaryKey for primary; fallbackKey for fallback, registered AbortOnly).
// Use it to load keys from a file or a key service; GenerateKeys makes fresh
// ones.
func NewKeys(primary Signer, primaryKey VerifyKey, fallback Signer, fallbackKey VerifyKey) (*Keys, error) {
	if primary == nil || fallback == nil {
		return nil, fmt.Errorf("%w: a primary and a fallback signer are both required", ErrKey)
	}
	if primary.KeyID() != primaryKey.ID || fallback.KeyID() != fallbackKey.ID {
		return nil, fmt.Errorf("%w: signer and verify key kids differ", ErrKey)
	}
	fallbackKey.AbortOnly = true
	ring, err := NewKeyRing(primaryKey, fallbackKey)
	if err != nil {
		return nil, err
	}
	return &Keys{Ring: ring, Primary: primary, Fallback: fallback}, nil
}

// GenerateKeys makes the keys of one organism run: two fresh Ed25519 keys,
// kids "ed25519-YYYYMMDD-<8 hex>" (primary) and
// "ed25519-fallback-YYYYMMDD-<8 hex>" (fallback), dated from now. Nothing is
// written anywhere: tokens minted before a restart do not verify after it,
// which is right, since a token only ever verifies within its own turn.
func GenerateKeys(now time.Time) (*Keys, error) {
	day := now.UTC().Format("20060102")
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	primary, err := GenerateEd25519(fmt.Sprintf("ed25519-%s-%s", day, hex.EncodeToString(id[:4])))
	if err != nil {
		return nil, err
	}
	fallback, err := GenerateEd25519(fmt.Sprintf("ed25519-fallback-%s-%s", day, hex.EncodeToString(id[4:])))
	if err != nil {
		return nil, err
	}
	return NewKeys(primary, primary.VerifyKey(), fallback, fallback.VerifyKey())
}
