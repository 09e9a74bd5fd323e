package aeiou

import (
	"log/slog"
	"maps"
	"sync"
	"time"
)

// EventType says what an Event reports.
type EventType int

// The events.
const (
	// EventDecision: a turn was decided; Event.Record is the §10 entry.
	EventDecision EventType = iota + 1
	// EventRejected: a candidate token was ignored; Event.Reason says why.
	EventRejected
	// EventLint: a lint was raised; Event.Lint names it.
	EventLint
	// EventMint: a token was minted by the primary signer.
	EventMint
	// EventMintFallback: the primary failed (Event.Err) and the fallback
	// minted an abort token.
	EventMintFallback
	// EventMintFailed: both signers failed (Event.Err, ErrMagicInternal).
	EventMintFailed
)

// Event is one observation for metrics.
type Event struct {
	Type   EventType
	Record *Record
	Reason Reason
	Lint   Lint
	Err    error
}

// Observer receives events (counters, metrics). Observe is called
// synchronously on the deciding or minting goroutine and must be quick and
// safe for concurrent use.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe implements Observer.
func (f ObserverFunc) Observe(e Event) { f(e) }

type nopObserver struct{}

func (nopObserver) Observe(Event) {}

// Record is the decision log entry of §10.
type Record struct {
	TS        time.Time `json:"ts"`
	SID       string    `json:"SID"`
	TurnIndex int64     `json:"turn_index"`
	// Decision is continue, done, abort or halt.
	Decision string `json:"decision"`
	// Reason is the halt's code (ERR_TOKEN_MISSING, ERR_NO_PROGRESS), or
	// "fallback" for an abort minted by the fallback signer.
	Reason string `json:"reason,omitempty"`
	// KID and JTI identify the deciding token.
	KID string `json:"kid,omitempty"`
	JTI string `json:"jti,omitempty"`
	// LatencyMS runs from the turn's Start to the decision.
	LatencyMS    int64 `json:"latency_ms"`
	OutputBytes  int   `json:"output_bytes"`
	ScratchBytes int   `json:"scratch_bytes"`
	// VerificationFailureReason is the reason of the last candidate that
	// was ignored this turn, if any.
	VerificationFailureReason Reason `json:"verification_failure_reason,omitempty"`
	// Rejected counts the ignored candidates; Lints names the lints raised.
	Rejected int    `json:"rejected,omitempty"`
	Lints    []Lint `json:"lints,omitempty"`
}

// Attrs returns the record as slog attributes (thread = the session).
func (r Record) Attrs() []slog.Attr {
	a := []slog.Attr{
		slog.Time("ts", r.TS),
		slog.String("SID", r.SID),
		slog.Int64("turn_index", r.TurnIndex),
		slog.String("decision", r.Decision),
		slog.Int64("latency_ms", r.LatencyMS),
		slog.Int("output_bytes", r.OutputBytes),
		slog.Int("scratch_bytes", r.ScratchBytes),
	}
	opt := func(k, v string) {
		if v != "" {
			a = append(a, slog.String(k, v))
		}
	}
	opt("reason", r.Reason)
	opt("kid", r.KID)
	opt("jti", r.JTI)
	opt("verification_failure_reason", string(r.VerificationFailureReason))
	if r.Rejected > 0 {
		a = append(a, slog.Int("rejected", r.Rejected))
	}
	if len(r.Lints) > 0 {
		ls := make([]string, len(r.Lints))
		for i, l := range r.Lints {
			ls[i] = string(l)
		}
		a = append(a, slog.Any("lints", ls))
	}
	return a
}

// Counters is a simple Observer counting events: decisions by decision and
// reason, ignored candidates by reason (TTL expiries are Failures["expired"],
// jti dupes Failures["jti_replayed"]), lints, and mints.
type Counters struct {
	mu sync.Mutex
	c  CounterSnapshot
}

// CounterSnapshot is a copy of the counts.
type CounterSnapshot struct {
	// Decisions is keyed by decision, or decision/reason when there is a
	// reason ("halt/ERR_TOKEN_MISSING", "abort/fallback").
	Decisions map[string]uint64
	// Failures is keyed by verification failure reason.
	Failures map[Reason]uint64
	// Lints is keyed by lint.
	Lints map[Lint]uint64
	// Mints, FallbackMints and MintFailures count magic-tool outcomes.
	Mints, FallbackMints, MintFailures uint64
}

// Observe implements Observer.
func (c *Counters) Observe(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c.Decisions == nil {
		c.c.Decisions, c.c.Failures, c.c.Lints = map[string]uint64{}, map[Reason]uint64{}, map[Lint]uint64{}
	}
	switch e.Type {
	case EventDecision:
		if e.Record != nil {
			k := e.Record.Decision
			if e.Record.Reason != "" {
				k += "/" + e.Record.Reason
			}
			c.c.Decisions[k]++
		}
	case EventRejected:
		c.c.Failures[e.Reason]++
	case EventLint:
		c.c.Lints[e.Lint]++
	case EventMint:
		c.c.Mints++
	case EventMintFallback:
		c.c.FallbackMints++
	case EventMintFailed:
		c.c.MintFailures++
	}
}

// Snapshot returns a copy of the counts.
func (c *Counters) Snapshot() CounterSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.c
	s.Decisions = maps.Clone(c.c.Decisions)
	s.Failures = maps.Clone(c.c.Failures)
	s.Lints = maps.Clone(c.c.Lints)
	if s.Decisions == nil {
		s.Decisions, s.Failures, s.Lints = map[string]uint64{}, map[Reason]uint64{}, map[Lint]uint64{}
	}
	return s
}

// MultiObserver fans events out to several observers.
type MultiObserver []Observer

// Observe implements Observer.
func (m MultiObserver) Observe(e Event) {
	for _, o := range m {
		o.Observe(e)
	}
}
