package store

import (
	"context"
	"database/sql"
	"fmt"
)

// addedColumns are the columns added to a table after its layout was
// released. Each only adds to its table, with the default 0 (or the empty string for a
// text column: decl), so the layout version stays: a binary that does not
// know a column reads the rows as before and writes them with the
// default, which means what it meant before the column was kept:
//   - threads.hops (ThreadRow.Hops): a conversation a peer's call began
//     counts its hops from its entry again;
//   - threads.marks (ThreadRow.Spent, ThreadRow.Awaiting): no marks, so
//     the thread waits for the TTL;
//   - slots.seq (SlotRow.Seq): an agent tells the messages of its history
//     apart by their content;
//   - approvals.owner (ApprovalRow.Owner): nobody's, so an approval of a
//     kind private to its owner is left to admins;
//   - llm_calls.usage_estimated (CallRow.UsageEstimated): the call's tokens
//     read as reported (Reader.Calls selects 0 until the column exists).
var addedColumns = []struct{ table, column, decl string }{
	{"threads", "hops", ""},
	{"threads", "marks", ""},
	{"slots", "seq", ""},
	{"approvals", "owner", "TEXT NOT NULL DEFAULT ''"},
	{"llm_calls", "usage_estimated", ""},
}

// addColumns adds, inside tx, each of addedColumns its table lacks.
func addColumns(ctx context.Context, tx *sql.Tx) error {
	for _, c := range addedColumns {
		ok, err := hasColumn(ctx, tx, c.table, c.column)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		decl := c.decl
		if decl == "" {
			decl = `INTEGER NOT NULL DEFAULT 0`
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+decl); err != nil {
			return fmt.Errorf("store: schema: add %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}

// hasColumn reports whether table has column.
func hasColumn(ctx context.Context, tx *sql.Tx, table, column string) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("store: schema: %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}
