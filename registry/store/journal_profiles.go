package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Layout 3 records the security profile (seed 000 §8.4) of every journal
// entry, so that each profile's retention can be applied to the entries
// journaled under it, and keeps the metadata of every pruned entry.
//
//   - journal_rows.profile is the profile of the thread the entry was
//     journaled on, as the thread registry names it: "" for the organism's
//     implicit profile (no profiles: section, or a thread begun without
//     one), else a profile name or an intersection "a&b". NULL means "not
//     recorded": the entry was journaled before layout 3. Retention treats
//     NULL as "" — the listener's retention, else journal.retention — which
//     is what governed those entries when they were written.
//   - journal_tombstones gains the pruned entry's metadata (time, thread,
//     conversation, direction, kind, sender, recipient, listener, root,
//     sha256, profile), copied from the row when retention deletes it, so
//     the audit trail of a pruned entry stays: only its bytes go. The
//     columns are NULL for tombstones written before layout 3 and for the
//     seqs of appends that failed (they never had a row).
//   - the journal view shows both: journal_rows with pruned NULL, and the
//     tombstones with payload, envelope and diagnostics NULL and pruned
//     saying why and when ("prune_on_delivery at 2026-…Z").
//   - journal_sweeps replaces journal_listeners: the retention sweep's
//     cursor is kept per (listener, profile) pair, since each pair has one
//     retention policy (retention_walk.go).
//
// The journal stays append-only: no row is ever updated; retention
// deletes rows (after their tombstone), as it did before.

// journalViewSchema is the journal view of layout 3.
const journalViewSchema = `CREATE VIEW IF NOT EXISTS journal AS SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z' AS time,
	thread, conversation, direction, kind, sender, recipient, listener, root,
	CASE WHEN instr(envelope, '</meta>') > 0 AND substr(envelope, -10) = '</message>'
		THEN substr(envelope, instr(envelope, '</meta>') + 7, length(envelope) - instr(envelope, '</meta>') - 16)
		ELSE envelope END AS payload,
	diagnostics, envelope, time_ns, profile, NULL AS pruned
FROM journal_entries
UNION ALL SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z',
	thread, conversation, direction, kind, sender, recipient, listener, root,
	NULL, NULL, NULL, time_ns, profile,
	reason || ' at ' || strftime('%Y-%m-%dT%H:%M:%S', deleted_at / 1000000000, 'unixepoch') || 'Z'
FROM journal_tombstones;`

// tombstoneMetadata are the columns layout 3 added to journal_tombstones,
// with their journal_rows counterparts.
var tombstoneMetadata = []struct{ column, decl string }{
	{"time_ns", "INTEGER"}, {"thread", "TEXT"}, {"conversation", "TEXT"}, {"direction", "TEXT"}, {"kind", "TEXT"},
	{"sender", "TEXT"}, {"recipient", "TEXT"}, {"listener", "TEXT"}, {"root", "TEXT"}, {"sha256", "BLOB"},
	{"profile", "TEXT"},
}

// hasColumn reports whether table has column.
func hasColumn(ctx context.Context, tx *sql.Tx, table, column string) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("store: schema: %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}

// migrateJournalProfiles brings a database of an older layout to layout 3,
// inside tx, after schema was applied: it adds journal_rows.profile (NULL
// for the entries already journaled: not recorded) and the tombstones'
// metadata columns (NULL for the tombstones already written), moves the
// sweep cursors of journal_listeners to journal_sweeps (profile "", the
// pair the existing entries are swept under) and replaces the journal view.
// Every step is skipped when already done, so a fresh database (created
// with the layout-3 tables by schema) only gets its view replaced.
func migrateJournalProfiles(ctx context.Context, tx *sql.Tx) error {
	ok, err := hasColumn(ctx, tx, "journal_rows", "profile")
	if err != nil {
		return err
	}
	if !ok {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE journal_rows ADD COLUMN profile TEXT`); err != nil {
			return fmt.Errorf("store: schema: add journal_rows.profile: %w", err)
		}
	}
	for _, c := range tombstoneMetadata {
		ok, err := hasColumn(ctx, tx, "journal_tombstones", c.column)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE journal_tombstones ADD COLUMN `+c.column+` `+c.decl); err != nil {
			return fmt.Errorf("store: schema: add journal_tombstones.%s: %w", c.column, err)
		}
	}
	var old int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'journal_listeners'`).
		Scan(&old); err != nil {
		return fmt.Errorf("store: schema: journal_listeners: %w", err)
	}
	if old > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO journal_sweeps (listener, profile, swept_seq)
			SELECT listener, '', swept_seq FROM journal_listeners; DROP TABLE journal_listeners`); err != nil {
			return fmt.Errorf("store: schema: move the sweep cursors: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS journal; `+journalViewSchema); err != nil {
		return fmt.Errorf("store: schema: the journal view: %w", err)
	}
	return nil
}

// Pruned is what the journal keeps of an entry retention deleted: the
// entry's metadata, from its tombstone (layout 3), without its bytes.
type Pruned struct {
	// Entry holds the pruned entry's metadata: seq, time, thread,
	// conversation, direction, kind, sender, recipient, listener, root,
	// SHA-256 and profile. Bytes and Diagnostics are empty.
	Entry
	// Reason is the policy that pruned it, as Retention.String writes it.
	Reason string
	// At is when it was pruned.
	At time.Time
	// NoMetadata marks a tombstone written before the journal kept the
	// metadata of pruned entries (layout 3): Entry holds only Seq.
	NoMetadata bool
}

// PrunedOf returns the pruned entries of the conversation or thread id, in
// seq order (tombstones written before layout 3 hold no metadata and are
// not found by id).
func (r *Reader) PrunedOf(id string) ([]Pruned, error) {
	var out []Pruned
	err := r.read(func(db *sql.DB) error {
		var err error
		out, err = scanPruned(context.Background(), db, `SELECT `+prunedColumns+`
			FROM journal_tombstones WHERE conversation = ?1 OR thread = ?1 ORDER BY seq`, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read pruned entries: %w", err)
	}
	return out, nil
}
