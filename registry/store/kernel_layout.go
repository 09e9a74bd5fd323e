package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// legacyKernelTables are the kernel tables of the legacy layout: rowid
// tables (each row written into the table and the index of its key), which
// the current layout keeps WITHOUT ROWID (kernel_writes.go) with more
// columns (the correlation refs of schema versions before 12, the threads'
// profiles, hops and marks, the slots' seqs).
var legacyKernelTables = []string{"threads", "watchers", "slots"}

// legacyAside is the name a legacy kernel table is set aside under while
// the migration copies it.
func legacyAside(table string) string { return "legacy_" + table }

// setLegacyKernelAside renames the legacy kernel tables, inside tx, before
// the schema creates the current ones under their names.
func setLegacyKernelAside(ctx context.Context, tx *sql.Tx) error {
	for _, t := range legacyKernelTables {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+t+` RENAME TO `+legacyAside(t)); err != nil {
			return fmt.Errorf("store: migrate the legacy %s table (set it aside): %w", t, err)
		}
	}
	return nil
}

// copyLegacyKernel copies, inside tx, every row of each legacy kernel table
// into the table the schema created, the columns the new table lacks taking
// their defaults; it checks the copy (as many rows, none of the old ones
// missing or changed in any column, values compared with their types) and
// drops the old table. A legacy column the new table does not have fails
// the migration rather than lose its values.
func copyLegacyKernel(ctx context.Context, tx *sql.Tx) error {
	for _, t := range legacyKernelTables {
		if err := copyLegacyTable(ctx, tx, t); err != nil {
			return fmt.Errorf("store: migrate the legacy %s table (%w)", t, err)
		}
	}
	return nil
}

// copyLegacyTable is copyLegacyKernel for table.
func copyLegacyTable(ctx context.Context, tx *sql.Tx, table string) error {
	old := legacyAside(table)
	var cols, lost []string
	err := eachRow(ctx, tx, `SELECT o.name, n.name IS NOT NULL FROM pragma_table_info(?1) AS o
		LEFT JOIN pragma_table_info(?2) AS n ON n.name = o.name ORDER BY o.cid`, []any{old, table},
		func(rows *sql.Rows) error {
			var (
				name string
				kept bool
			)
			err := rows.Scan(&name, &kept)
			if kept {
				cols = append(cols, name)
			} else {
				lost = append(lost, name)
			}
			return err
		})
	if err != nil {
		return fmt.Errorf("read its columns: %w", err)
	}
	if len(lost) > 0 {
		return fmt.Errorf("columns %v have no place in the current layout", lost)
	}
	list := strings.Join(cols, ", ")
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (`+list+`) SELECT `+list+` FROM `+old); err != nil {
		return fmt.Errorf("copy the rows: %w", err)
	}
	var differ int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM `+old+`) - (SELECT count(*) FROM `+table+`)
		+ (SELECT count(*) FROM (SELECT `+list+` FROM `+old+` EXCEPT SELECT `+list+` FROM `+table+`))`).
		Scan(&differ); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if differ != 0 {
		return fmt.Errorf("check the copy: the copy differs from the old table in %d rows", differ)
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+old); err != nil {
		return fmt.Errorf("drop the old table: %w", err)
	}
	return nil
}
