package store

import (
	"context"
	"database/sql"
	"fmt"
)

// journalRebuild is one layout step that rebuilds journal_rows: the old
// table is set aside under old, the new one created by schema, filled by
// fill (statements reading old), checked by check (a query of the rows of
// old that the new table does not read back as they were, given the old
// row count as ?1) and the old table dropped.
type journalRebuild struct {
	what   string        // named in errors: "names", "routes"
	old    string        // the old table's name while the step runs
	schema string        // creates the new table (and the views over it)
	fill   []journalStep // enter what the new rows refer to, then copy the rows
	check  string        // the count of rows that differ; 0 when the copy holds
}

// journalStep is a statement of a journalRebuild and the step its error
// names.
type journalStep struct{ step, sql string }

// run carries the step out inside tx. Any failure fails tx, which leaves
// the database as it was.
func (r journalRebuild) run(ctx context.Context, tx *sql.Tx) error {
	fail := func(step string, err error) error {
		return fmt.Errorf("store: schema: migrate the journal's %s (%s): %w", r.what, step, err)
	}
	var before int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM journal_rows`).Scan(&before); err != nil {
		return fail("count", err)
	}
	// The views and triggers name journal_rows: they go first and are
	// recreated by the schemas applied after the step.
	if _, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS journal; DROP VIEW IF EXISTS journal_entries;
		DROP TRIGGER IF EXISTS journal_append_only; DROP TRIGGER IF EXISTS journal_delete_needs_tombstone;
		ALTER TABLE journal_rows RENAME TO `+r.old); err != nil {
		return fail("set the old table aside", err)
	}
	if _, err := tx.ExecContext(ctx, r.schema); err != nil {
		return fail("create the table", err)
	}
	for _, q := range r.fill {
		if _, err := tx.ExecContext(ctx, q.sql); err != nil {
			return fail(q.step, err)
		}
	}
	var differ int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM journal_rows) - ?1 + (`+r.check+`)`, before).Scan(&differ); err != nil {
		return fail("check the copy", err)
	}
	if differ != 0 {
		return fail("check the copy", fmt.Errorf("the copy differs from the journal in %d rows", differ))
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+r.old); err != nil {
		return fail("drop the old table", err)
	}
	return nil
}
