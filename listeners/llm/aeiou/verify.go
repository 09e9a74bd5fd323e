package aeiou

import (
	"time"
)

// Reason says why a candidate token was not honoured. The set is fixed (see
// Reasons), so it is fit for a metric label.
type Reason string

// Reasons of a failed verification, in the order Verify checks.
const (
	// ReasonOversize: over MaxTokenBytes.
	ReasonOversize Reason = "oversize"
	// ReasonMalformed: not §7's TOKEN, or base64url that does not decode
	// strictly.
	ReasonMalformed Reason = "malformed"
	// ReasonUnknownKind: a KIND other than LOOP (§5.2).
	ReasonUnknownKind Reason = "unknown_kind"
	// ReasonBadPayload: the payload is not JSON under the JCS rules (floats,
	// duplicate keys, invalid Unicode) or not an object.
	ReasonBadPayload Reason = "bad_payload"
	// ReasonNonCanonical: the payload is JSON but not its own JCS form.
	ReasonNonCanonical Reason = "non_canonical"
	// ReasonBadClaims: a §6.3 field missing or of the wrong type.
	ReasonBadClaims Reason = "bad_claims"
	// ReasonUnknownKey: no key in the ring has the token's kid.
	ReasonUnknownKey Reason = "unknown_kid"
	// ReasonKeyRetired: the kid's rotation grace is over (§11.5).
	ReasonKeyRetired Reason = "key_retired"
	// ReasonBadSignature: the tag does not verify under the kid's key (a
	// forged or altered token).
	ReasonBadSignature Reason = "bad_signature"
	// ReasonUnsupportedVersion: "v" is not 3.
	ReasonUnsupportedVersion Reason = "unsupported_version"
	// ReasonKindMismatch: the payload's kind differs from the header's.
	ReasonKindMismatch Reason = "kind_mismatch"
	// ReasonBadAction: payload.action is not continue, done or abort.
	ReasonBadAction Reason = "bad_action"
	// ReasonAbortOnlyKey: a fallback key tagged an action other than abort.
	ReasonAbortOnlyKey Reason = "key_abort_only"
	// ReasonWrongSession, ReasonWrongTurn, ReasonWrongNonce: the binding to
	// the current turn fails (§6.5).
	ReasonWrongSession Reason = "wrong_session"
	ReasonWrongTurn    Reason = "wrong_turn"
	ReasonWrongNonce   Reason = "wrong_nonce"
	// ReasonTTLTooLong: a ttl of 0 or less, or above the verifier's
	// MaxTTL (the rotation grace relies on that bound).
	ReasonTTLTooLong Reason = "ttl_out_of_range"
	// ReasonNotYetValid: issued_at later than now plus the allowed skew.
	ReasonNotYetValid Reason = "not_yet_valid"
	// ReasonExpired: now > issued_at + ttl.
	ReasonExpired Reason = "expired"
	// ReasonReplayed: the jti was already honoured in this session within
	// the replay window (§6.5, §11.3), or appears twice in one output.
	ReasonReplayed Reason = "jti_replayed"
)

// Reasons of a candidate the turn scan ignores without verifying it: the
// token is not alone on its line (§5.3, §6.2).
const (
	// ReasonEmbedded: other text (or whitespace) shares the token's line.
	ReasonEmbedded Reason = "embedded"
	// ReasonQuoted: the token is in quotation marks or a '>' blockquote.
	ReasonQuoted Reason = "quoted"
	// ReasonBackticked: the token is in `backticks`.
	ReasonBackticked Reason = "backticked"
	// ReasonFenced: the token line is inside a ``` or ~~~ code fence.
	ReasonFenced Reason = "fenced"
	// ReasonSplit: the token starts on a line but does not end on it (split
	// across lines or cut short).
	ReasonSplit Reason = "split"
	// ReasonTooMany: a bare token line beyond the first MaxCandidates of
	// the output, not verified (bounds the signature checks per turn).
	ReasonTooMany Reason = "too_many_candidates"
)

// Reasons lists every Reason (for pre-registering metric labels).
func Reasons() []Reason {
	return []Reason{
		ReasonOversize, ReasonMalformed, ReasonUnknownKind, ReasonBadPayload, ReasonNonCanonical,
		ReasonBadClaims, ReasonUnknownKey, ReasonKeyRetired, ReasonBadSignature,
		ReasonUnsupportedVersion, ReasonKindMismatch, ReasonBadAction, ReasonAbortOnlyKey,
		ReasonWrongSession, ReasonWrongTurn, ReasonWrongNonce, ReasonTTLTooLong, ReasonNotYetValid,
		ReasonExpired, ReasonReplayed,
		ReasonEmbedded, ReasonQuoted, ReasonBackticked, ReasonFenced, ReasonSplit, ReasonTooMany,
	}
}

// Verifier checks control tokens against the key ring, the current turn, the
// clock and the replay cache (§6.5). It is safe for concurrent use.
type Verifier struct {
	ring    *KeyRing
	replay  *ReplayCache
	now     func() time.Time
	maxTTL  int64 // seconds
	maxSkew int64 // seconds
}

// NewVerifier returns a verifier over ring and replay, with cfg's MaxTTL and
// MaxSkew (zero fields take their defaults) and the clock now (nil:
// time.Now).
func NewVerifier(ring *KeyRing, replay *ReplayCache, cfg Config, now func() time.Time) *Verifier {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	return &Verifier{
		ring:    ring,
		replay:  replay,
		now:     now,
		maxTTL:  int64(cfg.MaxTTL / time.Second),
		maxSkew: int64(cfg.MaxSkew / time.Second),
	}
}

// Verify checks one token string (exactly the token, nothing around it) for
// turn and, when it verifies, records its jti in the replay cache: the same
// token never verifies twice. A failure is a *VerifyError.
func (v *Verifier) Verify(token string, turn Turn) (Claims, error) {
	c, verr := v.check(token, turn, v.now())
	if verr != nil {
		return Claims{}, verr
	}
	if verr := v.consume(c); verr != nil {
		return Claims{}, verr
	}
	return c, nil
}

// consume records c's jti; a jti already there is ReasonReplayed.
func (v *Verifier) consume(c Claims) *VerifyError {
	if !v.replay.Add(c.SessionID, c.JTI, v.now()) {
		return verifyErr(ReasonReplayed, "jti %s", c.JTI)
	}
	return nil
}

// check runs every check but the replay cache.
func (v *Verifier) check(token string, turn Turn, now time.Time) (Claims, *VerifyError) {
	w, verr := splitToken(token)
	if verr != nil {
		return Claims{}, verr
	}
	if w.kind != KindLoop {
		return Claims{}, verifyErr(ReasonUnknownKind, "%s", w.kind)
	}
	payload, err := b64.DecodeString(w.payload64)
	if err != nil {
		return Claims{}, verifyErr(ReasonMalformed, "payload: %v", err)
	}
	tag, err := b64.DecodeString(w.tag64)
	if err != nil {
		return Claims{}, verifyErr(ReasonMalformed, "tag: %v", err)
	}
	c, verr := decodeClaims(payload)
	if verr != nil {
		return Claims{}, verr
	}
	key, reason := v.ring.lookup(c.KeyID, now)
	if reason != "" {
		return Claims{}, verifyErr(reason, "kid %q", c.KeyID)
	}
	if !key.check(signingInput(w.kind, w.payload64), tag) {
		return Claims{}, verifyErr(ReasonBadSignature, "kid %q", c.KeyID)
	}
	nowSec := now.Unix()
	switch {
	case c.Version != Version:
		return Claims{}, verifyErr(ReasonUnsupportedVersion, "v=%d", c.Version)
	case c.Kind != w.kind:
		return Claims{}, verifyErr(ReasonKindMismatch, "header %s, payload %s", w.kind, c.Kind)
	case c.Action.rank() == 0:
		return Claims{}, verifyErr(ReasonBadAction, "%q", c.Action)
	case key.AbortOnly && c.Action != ActionAbort:
		return Claims{}, verifyErr(ReasonAbortOnlyKey, "kid %q, action %s", c.KeyID, c.Action)
	case c.SessionID != turn.SessionID:
		return Claims{}, verifyErr(ReasonWrongSession, "")
	case c.TurnIndex != turn.Index:
		return Claims{}, verifyErr(ReasonWrongTurn, "token turn %d, current %d", c.TurnIndex, turn.Index)
	case c.TurnNonce != turn.Nonce:
		return Claims{}, verifyErr(ReasonWrongNonce, "")
	case c.TTL <= 0 || c.TTL > v.maxTTL:
		return Claims{}, verifyErr(ReasonTTLTooLong, "ttl %d (1-%d)", c.TTL, v.maxTTL)
	case c.IssuedAt > nowSec+v.maxSkew:
		return Claims{}, verifyErr(ReasonNotYetValid, "issued_at %d, now %d", c.IssuedAt, nowSec)
	case nowSec > c.IssuedAt+c.TTL:
		return Claims{}, verifyErr(ReasonExpired, "expired at %d, now %d", c.IssuedAt+c.TTL, nowSec)
	}
	return c, nil
}
