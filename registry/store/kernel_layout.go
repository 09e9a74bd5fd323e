package store

import (
	"context"
	"database/sql"
	"fmt"
)

// kernelRebuild is one kernel table of the layout 6 migration: a rowid
// table of layout 5 (or older) rebuilt as the WITHOUT ROWID table schema
// creates (kernel_writes.go), every row copied.
type kernelRebuild struct {
	table   string // threads, watchers, slots
	schema  string // creates the new table
	columns string // every column, copied by name
}

// kernelRebuilds are the kernel tables layout 6 rebuilds.
var kernelRebuilds = []kernelRebuild{
	{"threads", threadsSchema, `id, parent, path, created_ns, touched_ns, ref, profile`},
	{"watchers", watchersSchema, `id, thread, issuer, wait_for, from_listener, description, raised,
		triggered_from, created_ns`},
	{"slots", slotsSchema, `thread, idx, from_name, to_name, payload_type, raw, time_ns, own_name,
		is_self_call, in_reply_to`},
}

// migrateKernelTables brings the kernel tables of a database of an older
// layout to layout 6, inside tx: each one still a rowid table is set aside
// under <table>_v5, created anew WITHOUT ROWID, filled with the old rows,
// checked against them (same count, no row that differs in any column)
// and the old table dropped. A table already WITHOUT ROWID (a fresh
// database, whose tables schema created just before) is left as it is.
// Any failure fails tx, which leaves the database as it was.
func migrateKernelTables(ctx context.Context, tx *sql.Tx) error {
	for _, r := range kernelRebuilds {
		if err := r.run(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// run rebuilds r's table inside tx unless it is WITHOUT ROWID already.
func (r kernelRebuild) run(ctx context.Context, tx *sql.Tx) error {
	fail := func(step string, err error) error {
		return fmt.Errorf("store: schema: migrate the %s table (%s): %w", r.table, step, err)
	}
	var withoutRowid bool
	if err := tx.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?`,
		r.table).Scan(&withoutRowid); err != nil {
		return fail("read its kind", err)
	}
	if withoutRowid {
		return nil
	}
	old := r.table + "_v5"
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+r.table+` RENAME TO `+old); err != nil {
		return fail("set the old table aside", err)
	}
	if _, err := tx.ExecContext(ctx, r.schema); err != nil {
		return fail("create the table", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+r.table+` (`+r.columns+`) SELECT `+r.columns+` FROM `+old); err != nil {
		return fail("copy the rows", err)
	}
	// The copy holds when it has as many rows as the old table and none of
	// the old rows is missing from it, column by column (values compare
	// with their types: a text is not an integer of the same digits).
	var differ int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM `+old+`) - (SELECT count(*) FROM `+r.table+`)
		+ (SELECT count(*) FROM (SELECT `+r.columns+` FROM `+old+` EXCEPT SELECT `+r.columns+` FROM `+r.table+`))`).
		Scan(&differ); err != nil {
		return fail("check the copy", err)
	}
	if differ != 0 {
		return fail("check the copy", fmt.Errorf("the copy differs from the old table in %d rows", differ))
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+old); err != nil {
		return fail("drop the old table", err)
	}
	return nil
}
