package store

import (
	"context"
	"database/sql"
	"fmt"
)

// addThreadHops adds threads.hops (ThreadRow.Hops) to a database whose
// threads table lacks it, inside tx. The column only adds to the table,
// with a default, so the layout version stays: a binary that does not know
// it reads the rows as before and writes them with hops 0 (a conversation
// a peer's call began then counts its hops from its entry again, as it
// did before hops were carried).
func addThreadHops(ctx context.Context, tx *sql.Tx) error {
	ok, err := hasColumn(ctx, tx, "threads", "hops")
	if err != nil || ok {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE threads ADD COLUMN hops INTEGER NOT NULL DEFAULT 0`); err != nil {
		return fmt.Errorf("store: schema: add threads.hops: %w", err)
	}
	return nil
}
