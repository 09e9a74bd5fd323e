package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The retention policy names (seed 000 §7.1).
const (
	// RetainForever never deletes.
	RetainForever = "retain_forever"
	// PruneOnDelivery deletes entries once MarkDelivered recorded them
	// (and, when Retention.Window is set, once they are older than it).
	PruneOnDelivery = "prune_on_delivery"
	// RetainDays deletes entries older than Days days.
	RetainDays = "retain_days"
	// Window deletes entries older than Retention.Window.
	Window = "window"
)

// defaultSweepChunk is how many rows one writer transaction of a sweep
// deletes, so a large sweep never holds the writer for long.
const defaultSweepChunk = 1000

// Retention is a journal retention policy. The zero value means
// retain_forever.
type Retention struct {
	// Policy is retain_forever, prune_on_delivery, retain_days or window.
	Policy string `yaml:"policy"`
	// Days is the retention window for retain_days (> 0).
	Days int `yaml:"days"`
	// Window is the retention window for window (> 0). With
	// prune_on_delivery it is optional: a delivered entry is deleted only
	// once older than Window (what Either makes of prune_on_delivery and a
	// window).
	Window time.Duration `yaml:"window"`
}

// Validate reports an unknown policy or a missing day count or window.
func (r Retention) Validate() error {
	switch r.Policy {
	case "", RetainForever:
		return nil
	case PruneOnDelivery:
		if r.Window < 0 {
			return fmt.Errorf("%w: prune_on_delivery needs window >= 0, got %s", ErrInvalid, r.Window)
		}
		return nil
	case RetainDays:
		if r.Days <= 0 {
			return fmt.Errorf("%w: retain_days needs days > 0, got %d", ErrInvalid, r.Days)
		}
		return nil
	case Window:
		if r.Window <= 0 {
			return fmt.Errorf("%w: window needs a positive duration, got %s", ErrInvalid, r.Window)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown retention policy %q", ErrInvalid, r.Policy)
	}
}

// String returns the policy as written in seed 000 and the configuration:
// retain_forever, prune_on_delivery, retain_days(N) or window(D), and
// prune_on_delivery+window(D) for a combination Either made.
func (r Retention) String() string {
	switch r.Policy {
	case "":
		return RetainForever
	case RetainDays:
		return fmt.Sprintf("%s(%d)", RetainDays, r.Days)
	case Window:
		return Window + "(" + FormatWindow(r.Window) + ")"
	case PruneOnDelivery:
		if r.Window > 0 {
			return PruneOnDelivery + "+" + Window + "(" + FormatWindow(r.Window) + ")"
		}
		return PruneOnDelivery
	default:
		return r.Policy
	}
}

// forever reports whether r never deletes.
func (r Retention) forever() bool { return r.Policy == "" || r.Policy == RetainForever }

// age is how old an entry must be before r deletes it (0: any age).
func (r Retention) age() time.Duration {
	if r.Policy == RetainDays {
		return time.Duration(r.Days) * 24 * time.Hour
	}
	return r.Window
}

// Either returns the retention that keeps every entry a or b keeps: an
// entry is deleted only when both would delete it. retain_forever on
// either side keeps everything; two windows give the longer; with
// prune_on_delivery on either side, an entry is deleted once delivered
// and older than the longer window of the two (none: once delivered).
// It is how the retention of a profile and a listener's own combine, and
// the profiles of an intersection "a&b" (nothing is lost that either asked
// to keep, seed 000 §6.5).
func Either(a, b Retention) Retention {
	switch {
	case a.forever() || b.forever():
		return Retention{Policy: RetainForever}
	case a.Policy == PruneOnDelivery || b.Policy == PruneOnDelivery:
		return Retention{Policy: PruneOnDelivery, Window: max(a.age(), b.age())}
	case a.age() >= b.age():
		return a
	default:
		return b
	}
}

// RetentionFunc returns the retention policy of the journal entries of a
// listener journaled under a profile (entries without a listener are
// looked up as ""; entries journaled before the journal recorded profiles
// as profile ""). It carries the organism default, the per-listener
// overrides and the profiles' retention.
type RetentionFunc func(listener, profile string) Retention

// Sweep applies retention: for every (listener, profile) pair in the
// journal it deletes the entries the pair's policy no longer retains,
// recording a tombstone (seq, time, reason and the entry's metadata) for
// each, so Verify can tell pruning from loss and the journal view still
// shows what was pruned. It never edits a row. The time comes from Options.Clock. It returns how many entries it
// deleted; an invalid policy skips that listener and is reported in the
// error.
//
// Sweeps walk the journal in seq order from a cursor per pair
// (retention_walk.go), so each reads only what was journaled or expired
// since the previous one. retain_days and window never delete an entry
// younger than their window; an expired entry journaled after a younger one (a clock step
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
		r := policy(c.listener, c.profile)
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("listener %q profile %q: %w", c.listener, c.profile, err))
			continue
		}
		n, err := s.sweepListener(ctx, c, r, now)
		deleted += n
		if err != nil {
			errs = append(errs, fmt.Errorf("listener %q profile %q: %w", c.listener, c.profile, err))
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

// sweepListener applies r to the entries of c's listener and profile.
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

// FormatWindow writes a retention window as the configuration reads it
// (pump/config.ParseWindow): whole days as "7d", else the Go duration
// without zero minutes or seconds ("36h", "1h30m").
func FormatWindow(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
