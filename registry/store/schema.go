package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
)

// layoutVersion is the version of the store's layout, kept in the
// database's user_version: the journal as one row per envelope whose
// direction, kind and names are the id of a route in journal_routes
// (journal_routes.go, journal_names.go), each entry's security profile
// recorded (journal_profiles.go), and the kernel state's threads, watchers
// and slots as WITHOUT ROWID tables (kernel_writes.go). A database with a
// schema_version table instead is of the legacy segment layout before it
// (legacy.go) and is migrated by Open, once, straight into this layout;
// layouts 1 to 5 were written by development builds only and are refused
// (unreleased_layouts.go).
const layoutVersion = 6

// schema creates the store's layout. Every statement is idempotent (IF NOT
// EXISTS; the journal view is dropped and created again, so a changed view
// reaches existing databases too), and Open applies the whole list in one transaction each time it
// opens a database, so a table added to the list appears in existing
// databases at their next Open, without a version change.
//
// To add a table: declare its CREATE TABLE IF NOT EXISTS (with its indexes)
// as a constant beside the code that uses it, and append the constant here.
// Changing a table that exists needs a new layoutVersion and a step in
// prepareSchema that brings the older version to it (once a layout was
// released; until then, change the layout in place).
var schema = []string{journalSchema, kernelSchema, usersSchema, oobSignaturesSchema, llmCallsSchema, approvalsSchema,
	memorySchema, contextSegmentsSchema, killedSchema, contextExpiriesSchema}

// journalPartitionBits sets the journal's partitions: seqs s and t share a
// partition when s>>bits == t>>bits (1024 consecutive seqs). Lookup keys and
// delivery marks are kept per partition; changing it changes the layout.
const journalPartitionBits = 10

// partitionSize is the number of seqs in a journal partition.
const partitionSize = 1 << journalPartitionBits

// partitionOf is the partition of seq.
func partitionOf(seq int64) int64 { return seq >> journalPartitionBits }

// journalSchema is the journal: one row per envelope in journal_rows, its
// route (journal_routes.go) and profile (journal_profiles.go), and the
// journal view over them that sqlite3 users read (doc.go). The view's
// columns are computed when read: generated columns on the table would be
// computed at every INSERT, which cost the writer ~7 µs per row
// (BenchmarkJournalFlow: 17 against 10 µs of CPU per envelope).
//
// Triggers keep it append-only: no UPDATE, and a row is deleted (by
// retention) only after a tombstone records its seq and metadata.
// journal_state holds the highest seq ever assigned and the delivery
// watermark (deliveries.go), journal_delivered the delivery marks above
// it, journal_sweeps the retention sweep's cursor per listener and profile
// (retention.go) and journal_keys the thread and conversation lookup keys
// (journal_keys.go).
//
// journal_rows has no index besides its seq (doc.go) and no CHECK
// constraints: the writer validates every entry before it binds it
// (Entry.Validate), Verify reports a row that breaks those rules, and the
// constraints cost the writer ~0.5-0.9 µs per row.
var journalSchema = `
CREATE TABLE IF NOT EXISTS journal_rows (
	seq          INTEGER PRIMARY KEY,
	time_ns      INTEGER NOT NULL,
	thread       TEXT    NOT NULL,
	conversation TEXT    NOT NULL,
	route        INTEGER NOT NULL,
	sha256       BLOB    NOT NULL,
	envelope     TEXT    NOT NULL,
	diagnostics  TEXT
);
CREATE TABLE IF NOT EXISTS journal_tombstones (
	seq          INTEGER PRIMARY KEY,
	deleted_at   INTEGER NOT NULL,
	reason       TEXT    NOT NULL,
	time_ns      INTEGER,
	thread       TEXT,
	conversation TEXT,
	direction    TEXT,
	kind         TEXT,
	sender       TEXT,
	recipient    TEXT,
	listener     TEXT,
	root         TEXT,
	sha256       BLOB,
	profile      TEXT
);
` + journalNamesTable + `
` + journalRoutesSchema + `
` + journalViewSchema + `
CREATE TABLE IF NOT EXISTS journal_state (
	id            INTEGER PRIMARY KEY CHECK (id = 1),
	high_seq      INTEGER NOT NULL,
	delivered_seq INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO journal_state (id, high_seq) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS journal_delivered (
	part  INTEGER PRIMARY KEY,
	marks TEXT    NOT NULL CHECK (length(marks) = ` + strconv.Itoa(partitionSize) + `)
);
CREATE TABLE IF NOT EXISTS journal_sweeps (
	listener  TEXT    NOT NULL,
	profile   TEXT    NOT NULL,
	swept_seq INTEGER NOT NULL DEFAULT 0 CHECK (swept_seq >= 0),
	PRIMARY KEY (listener, profile)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal_keys (
	part   INTEGER NOT NULL,
	bucket INTEGER NOT NULL,
	keys   BLOB    NOT NULL,
	PRIMARY KEY (part, bucket)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS journal_append_only BEFORE UPDATE ON journal_rows
BEGIN
	SELECT RAISE(ABORT, 'journal is append-only');
END;
CREATE TRIGGER IF NOT EXISTS journal_delete_needs_tombstone BEFORE DELETE ON journal_rows
WHEN NOT EXISTS (SELECT 1 FROM journal_tombstones WHERE seq = OLD.seq)
BEGIN
	SELECT RAISE(ABORT, 'journal rows are deleted only after a tombstone');
END;
CREATE TRIGGER IF NOT EXISTS journal_tombstones_immutable_update BEFORE UPDATE ON journal_tombstones
BEGIN
	SELECT RAISE(ABORT, 'journal tombstones are immutable');
END;
CREATE TRIGGER IF NOT EXISTS journal_tombstones_immutable_delete BEFORE DELETE ON journal_tombstones
BEGIN
	SELECT RAISE(ABORT, 'journal tombstones are immutable');
END;
`

// prepareSchema brings the database of db, in the data directory dir, to
// the current layout in one transaction: it applies schema, migrating a
// database of the legacy layout (legacy.go), and records layoutVersion. It
// fails with ErrSchemaTooNew for a database of a newer layout and with
// ErrUnreleasedLayout for one of a development layout (layoutError),
// leaving the database as it was.
func prepareSchema(ctx context.Context, db *sql.DB, dir string, log *slog.Logger) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: schema: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	version, legacy, err := readLayout(ctx, tx)
	if err != nil {
		return err
	}
	if err := layoutError(dir, version, legacy); err != nil {
		return err
	}
	if legacy > 0 {
		if err := prepareLegacy(ctx, tx); err != nil {
			return err
		}
	}
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("store: schema: %w", err)
		}
	}
	if legacy > 0 {
		log.Info("store: migrating the legacy journal segments to the current layout", "legacy_schema", legacy)
		if err := migrateLegacy(ctx, tx); err != nil {
			return err
		}
	}
	if err := addColumns(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(layoutVersion)); err != nil {
		return fmt.Errorf("store: schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: schema: commit: %w", err)
	}
	return nil
}

// queryRower runs single-row queries: a *sql.DB, *sql.Conn or *sql.Tx.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readLayout returns the database's layout version and, for a database of
// the legacy layout (a schema_version table), its legacy schema version
// (else 0).
func readLayout(ctx context.Context, q queryRower) (version, legacy int, err error) {
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return 0, 0, fmt.Errorf("store: read the layout version: %w", err)
	}
	var tables int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'`).
		Scan(&tables); err != nil {
		return 0, 0, fmt.Errorf("store: read the layout version: %w", err)
	}
	if tables > 0 {
		if err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&legacy); err != nil {
			return 0, 0, fmt.Errorf("store: read the legacy schema version: %w", err)
		}
		legacy = max(legacy, 1) // an empty schema_version is still the legacy layout
	}
	return version, legacy, nil
}
