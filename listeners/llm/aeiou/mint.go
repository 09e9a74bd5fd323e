package aeiou

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Minter is the host side of the magic tool (§6.1): it mints tokens bound to
// a turn, tagged by the primary signer, and — when the primary fails — an
// abort token tagged by the in-memory fallback signer (§11.4). It is safe
// for concurrent use.
type Minter struct {
	mu       sync.RWMutex
	primary  Signer
	fallback Signer
	ring     *KeyRing
	ttl      int64 // seconds
	grace    time.Duration
	now      func() time.Time
	rand     io.Reader // jti source
	obs      Observer
}

// Minted is a minted token and what it says.
type Minted struct {
	// Token is the single line the model must emit verbatim, last.
	Token  string
	Claims Claims
	// Fallback is set when the primary signer failed and the fallback
	// minted an abort instead of what was asked; PrimaryErr is why.
	Fallback   bool
	PrimaryErr error
}

// NewMinter returns a minter over keys (its ring receives rotated keys),
// with cfg's TTL and rotation grace, the clock now (nil: time.Now) and an
// observer (nil: none).
func NewMinter(keys *Keys, cfg Config, now func() time.Time, obs Observer) (*Minter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if keys == nil || keys.Ring == nil || keys.Primary == nil || keys.Fallback == nil {
		return nil, fmt.Errorf("%w: keys need a ring, a primary and a fallback signer", ErrKey)
	}
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	if obs == nil {
		obs = nopObserver{}
	}
	return &Minter{
		primary:  keys.Primary,
		fallback: keys.Fallback,
		ring:     keys.Ring,
		ttl:      int64(cfg.TTL / time.Second),
		grace:    cfg.MaxTTL + cfg.RotationBuffer,
		now:      now,
		rand:     rand.Reader,
		obs:      obs,
	}, nil
}

// KeyID returns the primary signer's kid.
func (m *Minter) KeyID() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.primary.KeyID()
}

// Rotate makes next the primary signer (§11.5): key (next's verify key) joins
// the ring, and the old primary's key stays verifiable for MaxTTL +
// RotationBuffer from now, then is retired.
func (m *Minter) Rotate(next Signer, key VerifyKey) error {
	if next == nil || next.KeyID() != key.ID {
		return fmt.Errorf("%w: rotation needs a signer and its verify key", ErrKey)
	}
	if err := m.ring.Add(key); err != nil {
		return err
	}
	m.mu.Lock()
	old := m.primary
	m.primary = next
	m.mu.Unlock()
	return m.ring.Retire(old.KeyID(), m.now().Add(m.grace))
}

// Mint mints a kind token with payload for turn. payload holds "action"
// (continue, done or abort) and optionally "request" and "telemetry"
// objects; anything else, an unknown kind or a float is ErrBadRequest
// (the model can fix its call). A token over 1024 bytes is
// ErrTokenTooLarge. If the primary signer fails, the fallback mints an abort
// token (Minted.Fallback); if that fails too, the error is a *MintError
// (ErrMagicInternal).
func (m *Minter) Mint(turn Turn, kind string, payload map[string]any) (Minted, error) {
	if err := turn.Validate(); err != nil {
		return Minted{}, err
	}
	c, err := requestClaims(kind, payload)
	if err != nil {
		return Minted{}, err
	}
	jti, err := newJTI(m.rand)
	if err != nil {
		return Minted{}, m.failed(&MintError{Primary: fmt.Errorf("%w: jti: %v", ErrSigner, err), Fallback: errors.New("not tried: no jti")})
	}
	c.Version, c.JTI = Version, jti
	c.SessionID, c.TurnIndex, c.TurnNonce = turn.SessionID, turn.Index, turn.Nonce
	c.IssuedAt, c.TTL = m.now().Unix(), m.ttl
	m.mu.RLock()
	primary, fallback := m.primary, m.fallback
	m.mu.RUnlock()

	c.KeyID = primary.KeyID()
	tok, perr := safeEncode(c, primary)
	if perr == nil {
		if len(tok) > MaxTokenBytes {
			return Minted{}, fmt.Errorf("%w: %d bytes; shorten request and telemetry", ErrTokenTooLarge, len(tok))
		}
		m.obs.Observe(Event{Type: EventMint})
		return Minted{Token: tok, Claims: c}, nil
	}
	if !errors.Is(perr, ErrSigner) {
		return Minted{}, perr
	}
	// §11.4: the primary failed; the fallback can always stop the loop.
	requested := c.Action
	c.Action, c.Request = ActionAbort, map[string]any{}
	c.Telemetry = map[string]any{"fallback": true, "requested_action": string(requested)}
	c.KeyID = fallback.KeyID()
	tok, ferr := safeEncode(c, fallback)
	if ferr == nil && len(tok) > MaxTokenBytes {
		ferr = fmt.Errorf("%w: fallback token of %d bytes", ErrTokenTooLarge, len(tok))
	}
	if ferr != nil {
		return Minted{}, m.failed(&MintError{Primary: perr, Fallback: ferr})
	}
	m.obs.Observe(Event{Type: EventMintFallback, Err: perr})
	return Minted{Token: tok, Claims: c, Fallback: true, PrimaryErr: perr}, nil
}

func (m *Minter) failed(err *MintError) error {
	m.obs.Observe(Event{Type: EventMintFailed, Err: err})
	return err
}

// safeEncode is encodeToken with a signer panic turned into ErrSigner.
func safeEncode(c Claims, s Signer) (tok string, err error) {
	defer func() {
		if r := recover(); r != nil {
			tok, err = "", fmt.Errorf("%w: %s panicked: %v", ErrSigner, s.KeyID(), r)
		}
	}()
	return encodeToken(c, s)
}

// requestClaims checks a magic-tool request and returns its claims' kind and
// payload part.
func requestClaims(kind string, payload map[string]any) (Claims, error) {
	if kind != KindLoop {
		return Claims{}, fmt.Errorf("%w: unknown kind %q (AEIOU v3 knows only %q)", ErrBadRequest, kind, KindLoop)
	}
	var unknown []string
	for k := range payload {
		if k != "action" && k != "request" && k != "telemetry" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Claims{}, fmt.Errorf("%w: unknown payload keys %s (allowed: action, request, telemetry)", ErrBadRequest, strings.Join(unknown, ", "))
	}
	a, _ := payload["action"].(string)
	if Action(a).rank() == 0 {
		return Claims{}, fmt.Errorf("%w: payload.action must be \"continue\", \"done\" or \"abort\", got %v", ErrBadRequest, payload["action"])
	}
	c := Claims{Kind: kind, Action: Action(a)}
	var ok bool
	if c.Request, ok = objectField(payload, "request"); !ok {
		return Claims{}, fmt.Errorf("%w: payload.request must be an object", ErrBadRequest)
	}
	if c.Telemetry, ok = objectField(payload, "telemetry"); !ok {
		return Claims{}, fmt.Errorf("%w: payload.telemetry must be an object", ErrBadRequest)
	}
	for _, o := range []map[string]any{c.Request, c.Telemetry} {
		if _, err := MarshalCanonical(o); err != nil {
			return Claims{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
	}
	return c, nil
}
