package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrate brings db to the newest version in migs, one transaction per step,
// recording each applied version in schema_version. It is idempotent, and it
// fails with ErrSchemaTooNew when the database is newer than migs.
func migrate(ctx context.Context, db *sql.DB, migs []migration, clock func() int64) (int, error) {
	for i, m := range migs {
		if m.version != i+1 {
			return 0, fmt.Errorf("store: migration %d (%q) is out of order", m.version, m.name)
		}
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return 0, fmt.Errorf("store: create schema_version: %w", err)
	}
	current, err := schemaVersion(ctx, db)
	if err != nil {
		return 0, err
	}
	if current > len(migs) {
		return current, fmt.Errorf("%w: database is at version %d, this binary knows up to %d",
			ErrSchemaTooNew, current, len(migs))
	}
	for _, m := range migs[current:] {
		if err := applyMigration(ctx, db, m, clock()); err != nil {
			return current, err
		}
		current = m.version
	}
	return current, nil
}

// schemaVersion returns the highest applied migration version (0 if none).
func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", err)
	}
	return v, nil
}

// applyMigration runs one migration and records it, atomically.
func applyMigration(ctx context.Context, db *sql.DB, m migration, now int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %d: begin: %w", m.version, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// Another binary may have migrated between the read and this immediate
	// transaction; re-check under the write lock.
	var applied int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_version WHERE version = ?`, m.version).Scan(&applied); err != nil {
		return fmt.Errorf("store: migration %d: %w", m.version, err)
	}
	if applied > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
	}
	if m.fn != nil {
		if err := m.fn(ctx, tx); err != nil {
			return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, now); err != nil {
		return fmt.Errorf("store: migration %d: record: %w", m.version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %d: commit: %w", m.version, err)
	}
	return nil
}
