package aeiou

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"
)

// Host is AEIOU loop control for one organism run: keys, minter, verifier,
// replay cache, observer and logger. Create one, then a Session per
// conversation. It is safe for concurrent use.
type Host struct {
	Keys     *Keys
	Minter   *Minter
	Verifier *Verifier
	Replay   *ReplayCache
	cfg      Config
	obs      Observer
	log      *slog.Logger
	now      func() time.Time
}

// Options assemble a Host.
type Options struct {
	// Config tunes TTLs, the replay cache and the progress guard.
	Config Config
	// Keys are the signing and verifying keys; nil generates fresh
	// Ed25519 keys (GenerateKeys) — the normal case: keys live as long as
	// the process, like the turns they bind.
	Keys *Keys
	// Observer receives events for metrics (nil: none).
	Observer Observer
	// Logger receives one record per decision (nil: slog.Default()).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// New returns a Host.
func New(o Options) (*Host, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	cfg := o.Config.withDefaults()
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Keys == nil {
		k, err := GenerateKeys(o.Now())
		if err != nil {
			return nil, err
		}
		o.Keys = k
	}
	m, err := NewMinter(o.Keys, cfg, o.Now, o.Observer)
	if err != nil {
		return nil, err
	}
	replay := NewReplayCache(cfg.ReplayTTL, cfg.ReplayCapacity)
	return &Host{
		Keys:     o.Keys,
		Minter:   m,
		Verifier: NewVerifier(o.Keys.Ring, replay, cfg, o.Now),
		Replay:   replay,
		cfg:      cfg,
		obs:      o.Observer,
		log:      o.Logger,
		now:      o.Now,
	}, nil
}

// Session is one conversation's loop-control state: its id (the SID; the
// thread id is the natural choice), its turn counter and current turn, and
// its progress guard. One turn is in flight at a time (§2): Begin opens it,
// Decide closes it.
type Session struct {
	host     *Host
	id       string
	mu       sync.Mutex
	next     int64
	turn     Turn
	open     bool
	progress *Progress
}

// Session returns a new session sid (its first turn has index 0).
func (h *Host) Session(sid string) (*Session, error) {
	if sid == "" || len(sid) > MaxSessionIDBytes || !utf8.ValidString(sid) {
		return nil, fmt.Errorf("%w: session id must be 1-%d bytes of UTF-8", ErrTurn, MaxSessionIDBytes)
	}
	return &Session{host: h, id: sid, progress: NewProgress(h.cfg.RepeatLimit)}, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Begin opens the next turn: the next index and a fresh nonce (§8 step 5).
// A turn still open is abandoned (its tokens can no longer verify).
func (s *Session) Begin() (Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := NewTurn(s.id, s.next, s.host.now())
	if err != nil {
		return Turn{}, err
	}
	s.next++
	s.turn, s.open = t, true
	return t, nil
}

// Turn returns the open turn, if any.
func (s *Session) Turn() (Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn, s.open
}

// Magic serves a magic-tool call made during the open turn: it returns the
// token to hand back to the model as the tool result, or an error whose
// text the model should see (ErrBadRequest, ErrTokenTooLarge) or that ends
// the loop (ErrMagicInternal: HALT(ERR_MAGIC_TOOL_INTERNAL)).
func (s *Session) Magic(args []byte) (Minted, error) {
	t, ok := s.Turn()
	if !ok {
		return Minted{}, fmt.Errorf("%w: no turn is open in session %q", ErrTurn, s.id)
	}
	return s.host.Minter.CallTool(t, args)
}

// Decide closes the open turn with its output (the text the model answered;
// only this is scanned) and scratch (private text of the turn, digested for
// the progress guard only, never scanned): it verifies and selects the
// token (Verifier.Decide), applies the progress guard (a continue on the
// N-th identical digest becomes OutcomeNoProgress), logs the §10 record and
// reports the events to the observer. Without an open turn the outcome is
// OutcomeMissing.
func (s *Session) Decide(ctx context.Context, output, scratch string) Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.host
	var d Decision
	if s.open {
		d = h.Verifier.Decide(s.turn, output)
	} else {
		d = Decision{Outcome: OutcomeMissing}
	}
	t := s.turn
	s.open = false
	d.Digest = Digest(output, scratch)
	var halt bool
	d.Repeats, halt = s.progress.Observe(d.Digest)
	if halt && d.Outcome == OutcomeContinue {
		d.Outcome = OutcomeNoProgress
	}
	now := h.now()
	r := Record{
		TS:           now,
		SID:          s.id,
		TurnIndex:    t.Index,
		Decision:     d.Outcome.String(),
		Reason:       d.Outcome.HaltCode(),
		OutputBytes:  len(output),
		ScratchBytes: len(scratch),
		Rejected:     len(d.Rejected),
		Lints:        d.Lints,
	}
	if !t.Start.IsZero() {
		r.LatencyMS = now.Sub(t.Start).Milliseconds()
	}
	if d.Token != nil {
		r.KID, r.JTI = d.Token.KeyID, d.Token.JTI
		if fb, _ := d.Token.Telemetry["fallback"].(bool); fb && d.Outcome == OutcomeAbort {
			if key, _ := h.Keys.Ring.lookup(d.Token.KeyID, now); key.AbortOnly {
				r.Reason = "fallback"
			}
		}
	}
	if n := len(d.Rejected); n > 0 {
		r.VerificationFailureReason = d.Rejected[n-1].Reason
	}
	d.Record = r
	for _, c := range d.Rejected {
		h.obs.Observe(Event{Type: EventRejected, Reason: c.Reason})
	}
	for _, l := range d.Lints {
		h.obs.Observe(Event{Type: EventLint, Lint: l})
	}
	h.obs.Observe(Event{Type: EventDecision, Record: &r})
	level := slog.LevelInfo
	if d.Outcome == OutcomeMissing || d.Outcome == OutcomeNoProgress || len(d.Rejected) > 0 {
		level = slog.LevelWarn
	}
	h.log.LogAttrs(ctx, level, "aeiou decision", r.Attrs()...)
	return d
}

// Forget drops the session's replay cache (the conversation is over).
func (s *Session) Forget() { s.host.Replay.Forget(s.id) }
