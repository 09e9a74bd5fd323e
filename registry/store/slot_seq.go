package store

import (
	"context"
	"database/sql"
	"fmt"
)

// addSlotSeq adds slots.seq (SlotRow.Seq) to a database whose slots table
// lacks it, inside tx. The column only adds to the table, with a default,
// so the layout version stays: a binary that does not know it reads the
// rows as before and writes them with seq 0 (an agent then tells the
// messages of its history apart by their content, as it did before seqs
// were kept).
func addSlotSeq(ctx context.Context, tx *sql.Tx) error {
	ok, err := hasColumn(ctx, tx, "slots", "seq")
	if err != nil || ok {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE slots ADD COLUMN seq INTEGER NOT NULL DEFAULT 0`); err != nil {
		return fmt.Errorf("store: schema: add slots.seq: %w", err)
	}
	return nil
}
