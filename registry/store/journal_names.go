package store

import (
	"context"
	"database/sql"
	"fmt"
)

// The low-cardinality names of a journal row's route (journal_routes.go)
// — sender, recipient, listener, root tag and profile — are integer ids
// into journal_names, which holds each distinct name once. The driver binds
// an integer as it is, where it allocates, copies and frees C memory for
// each string, and the route shrinks by the names' bytes. The journal view
// and journal_entries (the view every reader of the package reads) name
// them again, so they read as text columns would.
//
// The writer keeps the name → id map in memory (journalNames, an
// idCache). Names are never changed or deleted (triggers refuse both): a
// pruned row's tombstone holds its names as text, and Verify reports a row
// whose name is missing.

// journalNamesTable is journal_names, each name a journal row carries
// (through its route, journal_routes.go) entered once.
const journalNamesTable = `
CREATE TABLE IF NOT EXISTS journal_names (
	id   INTEGER PRIMARY KEY,
	name TEXT    NOT NULL UNIQUE
);
INSERT OR IGNORE INTO journal_names (id, name) VALUES (0, '');
CREATE TRIGGER IF NOT EXISTS journal_names_immutable_update BEFORE UPDATE ON journal_names
BEGIN
	SELECT RAISE(ABORT, 'journal names are immutable');
END;
CREATE TRIGGER IF NOT EXISTS journal_names_immutable_delete BEFORE DELETE ON journal_names
BEGIN
	SELECT RAISE(ABORT, 'journal names are immutable');
END;`

// maxCachedNames bounds the writer's name → id map (idCache). Names come
// from the registry (listeners, users, payload tags) and are few. (A
// variable for the tests.)
var maxCachedNames = 1 << 14

// journalNames is the writer's name → id map of journal_names.
type journalNames = idCache[string]

// loadJournalNames reads journal_names (up to maxCachedNames of them) and
// the next free id.
func loadJournalNames(ctx context.Context, q queryer) (journalNames, error) {
	n := newIDCache[string](&maxCachedNames)
	var high int64
	err := eachRow(ctx, q, `SELECT id, name FROM journal_names ORDER BY id`, nil, func(rows *sql.Rows) error {
		var (
			id   int64
			name string
		)
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		high = max(high, id)
		n.keep(name, id)
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("store: read journal names: %w", err)
	}
	n.next, n.txNext = high+1, high+1
	return n, nil
}

// nameID returns the id of name in journal_names; a new name gets the next
// id and is entered by the next insert, inside the open transaction.
func (w *writer) nameID(name string) (int64, error) {
	if id, ok := w.names.get(name); ok {
		return id, nil
	}
	if w.names.full() {
		ids, err := w.queryInt64s(`SELECT id FROM journal_names WHERE name = ?`, name)
		if err != nil {
			return 0, fmt.Errorf("store: look up journal name: %w", err)
		}
		if len(ids) == 1 {
			return ids[0], nil
		}
	}
	id := w.names.add(name)
	w.names.fresh = append(w.names.fresh, id, name)
	return id, nil
}

// namesInsert enters new names into journal_names.
var namesInsert = newRowStatement(`INSERT INTO journal_names (id, name) VALUES `, `(?, ?)`, ``, 2)
