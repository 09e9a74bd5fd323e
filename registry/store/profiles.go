package store

import (
	"context"
	"database/sql"
	"fmt"
)

// profileColumns are the columns layout 2 added to tables of layout 1 (and
// of the legacy layout): the security profiles (seed 000 §8.4) of the
// kernel state — each main-bus user's (the profile of the conversations
// the user begins, "" for none) and each thread's (fixed when the thread
// was created, so a restart restores it and never widens it).
var profileColumns = []struct{ table, column, decl string }{
	{"users", "profile", "TEXT NOT NULL DEFAULT ''"},
	{"threads", "profile", "TEXT NOT NULL DEFAULT ''"},
}

// addProfileColumns brings a database of an older layout to layout 2,
// inside tx: it adds each of profileColumns its table lacks.
func addProfileColumns(ctx context.Context, tx *sql.Tx) error {
	for _, c := range profileColumns {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n); err != nil {
			return fmt.Errorf("store: schema: %s.%s: %w", c.table, c.column, err)
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.decl); err != nil {
			return fmt.Errorf("store: schema: add %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}
