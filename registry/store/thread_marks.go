package store

import (
	"context"
	"database/sql"
	"fmt"
)

// addThreadMarks adds threads.marks (ThreadRow.Spent, ThreadRow.Awaiting)
// to a database whose threads table lacks it, inside tx. Like hops it only
// adds a column with a default, so the layout version stays: rows written
// before it have no marks, and their threads wait for the TTL, as they did.
func addThreadMarks(ctx context.Context, tx *sql.Tx) error {
	ok, err := hasColumn(ctx, tx, "threads", "marks")
	if err != nil || ok {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE threads ADD COLUMN marks INTEGER NOT NULL DEFAULT 0`); err != nil {
		return fmt.Errorf("store: schema: add threads.marks: %w", err)
	}
	return nil
}
