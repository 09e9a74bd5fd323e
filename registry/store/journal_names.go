package store

import (
	"context"
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
// The writer keeps the name → id map in memory (journalNames): loaded at
// Open, a name it has not seen is inserted into journal_names inside the
// transaction that first journals a route with it, with the next id. Names are never
// changed or deleted (triggers refuse both): a pruned row's tombstone holds
// its names as text, and Verify reports a row whose name is missing.

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

// maxCachedNames bounds the writer's name → id map. Names come from the
// registry (listeners, users, payload tags) and are few; past the bound
// (input that names many distinct senders or root tags, as dead letters
// may) a name the map lacks is looked up in journal_names instead.
// (A variable for the tests.)
var maxCachedNames = 1 << 14

// journalNames is the writer's name → id map of journal_names.
type journalNames struct {
	ids map[string]int64 // committed names, up to maxCachedNames
	tx  map[string]int64 // names the open transaction enters
	// fresh are the names noted since the last insertNames, as the INSERT's
	// arguments: id, name, ….
	fresh []any
	// next is the id the next new name gets; txNext the same inside the
	// open transaction.
	next, txNext int64
}

// loadJournalNames reads journal_names (up to maxCachedNames of them) and
// the next free id.
func loadJournalNames(ctx context.Context, q queryer) (journalNames, error) {
	n := journalNames{ids: make(map[string]int64), tx: make(map[string]int64)}
	rows, err := q.QueryContext(ctx, `SELECT id, name FROM journal_names ORDER BY id`)
	if err != nil {
		return n, fmt.Errorf("store: read journal names: %w", err)
	}
	defer rows.Close()
	var high int64
	for rows.Next() {
		var (
			id   int64
			name string
		)
		if err := rows.Scan(&id, &name); err != nil {
			return n, fmt.Errorf("store: read journal names: %w", err)
		}
		high = max(high, id)
		if len(n.ids) < maxCachedNames {
			n.ids[name] = id
		}
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("store: read journal names: %w", err)
	}
	n.next, n.txNext = high+1, high+1
	return n, nil
}

// committed makes the names of the committed transaction known.
func (n *journalNames) committed() {
	for name, id := range n.tx {
		if len(n.ids) < maxCachedNames {
			n.ids[name] = id
		}
	}
	n.next = n.txNext
	n.rolledBack()
}

// rolledBack forgets the names of the rolled-back transaction.
func (n *journalNames) rolledBack() {
	clear(n.tx)
	clear(n.fresh)
	n.fresh = n.fresh[:0]
	n.txNext = n.next
}

// nameID returns the id of name in journal_names; a new name gets the next
// id and is entered by the next insertNames, inside the open transaction.
func (w *writer) nameID(name string) (int64, error) {
	n := &w.names
	if id, ok := n.ids[name]; ok {
		return id, nil
	}
	if id, ok := n.tx[name]; ok {
		return id, nil
	}
	if len(n.ids) >= maxCachedNames {
		ids, err := w.queryInt64s(`SELECT id FROM journal_names WHERE name = ?`, name)
		if err != nil {
			return 0, fmt.Errorf("store: look up journal name: %w", err)
		}
		if len(ids) == 1 {
			return ids[0], nil
		}
	}
	id := n.txNext
	n.txNext++
	n.tx[name] = id
	n.fresh = append(n.fresh, id, name)
	return id, nil
}

// namesInsert enters new names into journal_names.
var namesInsert = newRowStatement(`INSERT INTO journal_names (id, name) VALUES `, `(?, ?)`, ``, 2)

// insertNames enters the names noted since the last call, inside the open
// transaction.
func (w *writer) insertNames() error {
	n := &w.names
	if len(n.fresh) == 0 {
		return nil
	}
	if _, err := w.execRows(namesInsert, len(n.fresh)/2, n.fresh); err != nil {
		return fmt.Errorf("store: enter journal names: %w", err)
	}
	clear(n.fresh)
	n.fresh = n.fresh[:0]
	return nil
}
