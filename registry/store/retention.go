package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The retention policy names (seed 000 §7.1).
const (
	// RetainForever never deletes.
	RetainForever = "retain_forever"
	// PruneOnDelivery deletes entries once MarkDelivered recorded them.
	PruneOnDelivery = "prune_on_delivery"
	// RetainDays deletes entries older than Days days.
	RetainDays = "retain_days"
)

// defaultSweepChunk is how many rows one writer transaction of a sweep
// deletes, so a large sweep never holds the writer for long.
const defaultSweepChunk = 1000

// Retention is a journal retention policy. The zero value means
// retain_forever.
type Retention struct {
	// Policy is retain_forever, prune_on_delivery or retain_days.
	Policy string `yaml:"policy"`
	// Days is the retention window for retain_days (> 0).
	Days int `yaml:"days"`
}

// Validate reports an unknown policy or a missing day count.
func (r Retention) Validate() error {
	switch r.Policy {
	case "", RetainForever, PruneOnDelivery:
		return nil
	case RetainDays:
		if r.Days <= 0 {
			return fmt.Errorf("%w: retain_days needs days > 0, got %d", ErrInvalid, r.Days)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown retention policy %q", ErrInvalid, r.Policy)
	}
}

// String returns the policy as written in seed 000: retain_forever,
// prune_on_delivery or retain_days(N).
func (r Retention) String() string {
	switch r.Policy {
	case "":
		return RetainForever
	case RetainDays:
		return fmt.Sprintf("%s(%d)", RetainDays, r.Days)
	default:
		return r.Policy
	}
}

// RetentionFunc returns the retention policy of a listener's journal entries
// (entries without a listener are looked up as ""). It carries the organism
// default and the per-listener overrides.
type RetentionFunc func(listener string) Retention

// Sweep applies retention: for every listener in the journal it deletes the
// entries its policy no longer retains, recording a tombstone (seq, time,
// reason) for each, so Verify can tell pruning from loss. It never edits a
// row. The time comes from Options.Clock. It returns how many entries it
// deleted; an invalid policy skips that listener and is reported in the
// error.
//
// Sweeps walk the journal in seq order from a cursor per listener
// (retention_walk.go), so each reads only what was journaled or expired
// since the previous one. retain_days never deletes an entry younger than
// its window; an expired entry journaled after a younger one (a clock step
// back) is deleted once every entry journaled before it has expired too.
// prune_on_delivery deletes delivered messages (MarkDelivered); the
// listener's other entries are never delivered and are kept. Concurrent
// sweeps run one after the other.
func (s *Store) Sweep(ctx context.Context, policy RetentionFunc) (int, error) {
	if err := s.readable(); err != nil {
		return 0, err
	}
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	cursors, err := s.sweepCursors(ctx)
	if err != nil {
		return 0, err
	}
	now := s.opts.Clock()
	var (
		deleted int
		errs    []error
	)
	for _, c := range cursors {
		r := policy(c.listener)
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("listener %q: %w", c.listener, err))
			continue
		}
		n, err := s.sweepListener(ctx, c, r, now)
		deleted += n
		if err != nil {
			errs = append(errs, fmt.Errorf("listener %q: %w", c.listener, err))
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				break
			}
		}
	}
	if deleted > 0 {
		s.log.Info("store: journal retention sweep", "deleted", deleted)
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("store: sweep: %w", errors.Join(errs...))
	}
	return deleted, nil
}

// sweepListener applies r to the entries of c's listener.
func (s *Store) sweepListener(ctx context.Context, c sweepCursor, r Retention, now time.Time) (int, error) {
	rule, ok, err := s.sweepRuleFor(ctx, c, r, now)
	if err != nil || !ok {
		return 0, err
	}
	return s.walk(ctx, c, rule, now.UnixNano())
}

// StartSweeper runs Sweep every interval until ctx ends, the returned stop
// function is called, or the Store closes. Sweep errors are logged. stop
// waits for a running sweep to finish.
func (s *Store) StartSweeper(ctx context.Context, interval time.Duration, policy RetentionFunc) (stop func(), err error) {
	if interval <= 0 {
		return nil, fmt.Errorf("%w: sweep interval %s", ErrInvalid, interval)
	}
	if policy == nil {
		return nil, fmt.Errorf("%w: nil retention policy", ErrInvalid)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	s.sweepers.Add(1)
	s.mu.RUnlock()

	ctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	go func() {
		defer s.sweepers.Done()
		defer close(exited)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.done:
				return
			case <-ticker.C:
			}
			n, err := s.Sweep(ctx, policy)
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			if err != nil {
				s.log.Error("store: retention sweep failed", "deleted", n, "err", err)
			}
			if s.afterSweep != nil {
				s.afterSweep(n, err)
			}
		}
	}()
	return func() { cancel(); <-exited }, nil
}
