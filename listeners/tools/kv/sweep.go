package kv

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// sweepBatch is how many expired namespaces (or expired keys) one
// transaction of a sweep deletes: the store has one connection, so a
// call waits at most for one batch, not for the whole sweep.
const sweepBatch = 256

// SweepEvery is how often Sweeping sweeps.
const SweepEvery = 10 * time.Minute

// Sweep deletes from the table the namespaces that expired as a whole
// (conversation_ttl after their last write) and the keys whose own TTL
// passed, a batch a transaction, so that calls run between batches. It
// returns how many namespaces it deleted. Calls never see what expired
// whether or not a sweep took it yet.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	gone := 0
	for {
		n, err := s.sweepNamespaces(ctx)
		gone += n
		if err != nil {
			return gone, fmt.Errorf("key_value: sweep: %w", err)
		}
		if n < sweepBatch {
			break
		}
	}
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv
			WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)`, s.now().UnixNano(), sweepBatch)
		if err != nil {
			return gone, fmt.Errorf("key_value: sweep: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n < sweepBatch {
			return gone, err
		}
	}
}

// sweepNamespaces deletes up to sweepBatch expired namespaces, their keys
// with them, in one transaction.
func (s *Store) sweepNamespaces(ctx context.Context) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	now := s.now().UnixNano()
	rows, err := tx.QueryContext(ctx, `SELECT namespace FROM kv_namespaces WHERE expires_at <= ? LIMIT ?`, now, sweepBatch)
	if err != nil {
		return 0, err
	}
	var names []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			rows.Close()
			return 0, err
		}
		names = append(names, ns)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	for _, ns := range names {
		if _, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE namespace = ?`, ns); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kv_namespaces WHERE namespace = ?`, ns); err != nil {
			return 0, err
		}
	}
	return len(names), tx.Commit()
}

// Sweeping sweeps at once and then every interval until ctx ends, logging
// what it deleted and any failure (the next sweep tries again).
func (s *Store) Sweeping(ctx context.Context, every time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := s.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("key_value: expired namespaces not swept; trying again later", "error", err)
		case n > 0:
			log.Info("key_value: expired conversation namespaces deleted", "namespaces", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
