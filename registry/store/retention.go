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
func (s *Store) Sweep(ctx context.Context, policy RetentionFunc) (int, error) {
	if err := s.readable(); err != nil {
		return 0, err
	}
	listeners, err := s.journalListeners(ctx)
	if err != nil {
		return 0, err
	}
	now := s.opts.Clock()
	var (
		deleted int
		errs    []error
	)
	for _, l := range listeners {
		r := policy(l)
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("listener %q: %w", l, err))
			continue
		}
		n, err := s.sweepListener(ctx, l, r, now)
		deleted += n
		if err != nil {
			errs = append(errs, fmt.Errorf("listener %q: %w", l, err))
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

// journalListeners lists the distinct listeners with journal rows.
func (s *Store) journalListeners(ctx context.Context) ([]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT DISTINCT listener FROM journal`)
	if err != nil {
		return nil, fmt.Errorf("store: sweep: list listeners: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, fmt.Errorf("store: sweep: list listeners: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// sweepListener deletes one listener's expired entries in chunks, each
// chunk one writer transaction.
func (s *Store) sweepListener(ctx context.Context, listener string, r Retention, now time.Time) (int, error) {
	var query string
	var args []any
	switch r.Policy {
	case "", RetainForever:
		return 0, nil
	case PruneOnDelivery:
		query = `SELECT j.seq FROM journal AS j JOIN journal_deliveries AS d ON d.seq = j.seq
			WHERE j.listener = ? ORDER BY j.seq LIMIT ?`
		args = []any{listener, s.sweepChunk}
	case RetainDays:
		cutoff := now.Add(-time.Duration(r.Days) * 24 * time.Hour)
		query = `SELECT seq FROM journal WHERE listener = ? AND time_ns < ? ORDER BY seq LIMIT ?`
		args = []any{listener, cutoff.UnixNano(), s.sweepChunk}
	}
	reason := r.String()
	at := now.UnixNano()
	total := 0
	for {
		n, err := s.do(ctx, "sweep", func(w *writer) (int64, error) {
			seqs, err := w.queryInt64s(query, args...)
			if err != nil {
				return 0, err
			}
			for _, seq := range seqs {
				if err := w.deleteEntry(seq, at, reason); err != nil {
					return 0, err
				}
			}
			return int64(len(seqs)), nil
		})
		total += int(n)
		if err != nil || n < int64(s.sweepChunk) {
			return total, err
		}
	}
}

// deleteEntry tombstones and deletes one journal row and its delivery mark.
func (w *writer) deleteEntry(seq, at int64, reason string) error {
	if _, err := w.exec(`INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES (?, ?, ?)`, seq, at, reason); err != nil {
		return fmt.Errorf("tombstone seq %d: %w", seq, err)
	}
	if _, err := w.exec(`DELETE FROM journal WHERE seq = ?`, seq); err != nil {
		return fmt.Errorf("delete seq %d: %w", seq, err)
	}
	if _, err := w.exec(`DELETE FROM journal_deliveries WHERE seq = ?`, seq); err != nil {
		return fmt.Errorf("delete delivery mark %d: %w", seq, err)
	}
	return nil
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
