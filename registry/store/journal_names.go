package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Layout 4 stored the low-cardinality names of a journal row — sender,
// recipient, listener, root tag and profile — as integer ids into
// journal_names, which holds each distinct name once; layout 5 keeps them
// there and stores them, with direction and kind, as one route id per row
// (journal_routes.go). The driver binds an
// integer as it is, where it allocates, copies and frees C memory for each
// string, and the row shrinks by the names' bytes. The journal view and
// journal_entries (the view every reader of the package reads) name them
// again, so they read exactly as the text columns of layout 3 did.
//
// The writer keeps the name → id map in memory (journalNames): loaded at
// Open, a name it has not seen is inserted into journal_names inside the
// transaction that first journals a route with it, with the next id. Names are never
// changed or deleted (triggers refuse both): a pruned row's tombstone holds
// its names as text, and Verify reports a row whose name is missing.

// journalNamesTable is journal_names, each name a journal row carries
// (through its route, layout 5, journal_routes.go) entered once.
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

// rowColumnsV4 are the columns of a layout-4 journal row, which the
// migrations of the older layouts write (legacy.go, migrateJournalNames)
// before migrateJournalRoutes brings the rows to layout 5.
const rowColumnsV4 = `seq, time_ns, thread, conversation, direction, kind, sender, recipient, listener, root, sha256,
	envelope, diagnostics, profile`

// journalSchemaV4 is the layout-4 journal_rows, its names as journal_names
// ids, and journal_entries over it: what prepareSchema creates, before the
// current schema, in a database of a layout before 5, so that the
// migrations of the older layouts write the rows they wrote in layout 4
// and migrateJournalRoutes moves them to layout 5 (a fresh database takes
// the same path with no rows). The names are joined, not looked up by a
// scalar subquery per column: SQLite runs each such subquery anew for
// every row, which made the thread summaries (Threads, a pass over every
// row) 3-4 times slower than with the names as text.
const journalSchemaV4 = `
CREATE TABLE IF NOT EXISTS journal_rows (
	seq          INTEGER PRIMARY KEY,
	time_ns      INTEGER NOT NULL,
	thread       TEXT    NOT NULL,
	conversation TEXT    NOT NULL,
	direction    TEXT    NOT NULL,
	kind         TEXT    NOT NULL,
	sender       INTEGER NOT NULL,
	recipient    INTEGER NOT NULL,
	listener     INTEGER NOT NULL,
	root         INTEGER NOT NULL,
	sha256       BLOB    NOT NULL,
	envelope     TEXT    NOT NULL,
	diagnostics  TEXT    NOT NULL,
	profile      INTEGER
);
` + journalNamesTable + `
CREATE VIEW IF NOT EXISTS journal_entries AS SELECT r.seq, r.time_ns, r.thread, r.conversation, r.direction,
	r.kind, coalesce(s.name, '') AS sender, coalesce(t.name, '') AS recipient, coalesce(l.name, '') AS listener,
	coalesce(o.name, '') AS root, r.sha256, r.envelope, r.diagnostics, p.name AS profile
FROM journal_rows AS r
	LEFT JOIN journal_names AS s ON s.id = r.sender
	LEFT JOIN journal_names AS t ON t.id = r.recipient
	LEFT JOIN journal_names AS l ON l.id = r.listener
	LEFT JOIN journal_names AS o ON o.id = r.root
	LEFT JOIN journal_names AS p ON p.id = r.profile;`

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

// rowColumnType returns the declared type of table.column ("" when the
// column does not exist).
func rowColumnType(ctx context.Context, tx *sql.Tx, table, column string) (string, error) {
	var typ string
	err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT type FROM pragma_table_info(?) WHERE name = ?), '')`,
		table, column).Scan(&typ)
	if err != nil {
		return "", fmt.Errorf("store: schema: %s.%s: %w", table, column, err)
	}
	return typ, nil
}

// nameIDOf is the SQL expression of the journal_names id of the name the
// SQL expression name gives.
func nameIDOf(name string) string { return `(SELECT id FROM journal_names WHERE name = ` + name + `)` }

// migrateJournalNames brings a database of an older layout to layout 4,
// inside tx, after schema and the earlier steps were applied: when
// journal_rows still holds its names as text, it builds the layout-4 table
// beside it, enters every distinct name into journal_names, copies every
// row with its names as ids, checks that the copy holds the same rows and
// names, drops the old table and names the new one journal_rows; then it
// recreates the journal's triggers and views. Any failure fails tx, which
// leaves the database as it was. A journal_rows that holds ids already (a
// fresh database's, created by journalSchemaV4) is left alone.
func migrateJournalNames(ctx context.Context, tx *sql.Tx) error {
	typ, err := rowColumnType(ctx, tx, "journal_rows", "sender")
	if err != nil {
		return err
	}
	if typ != "TEXT" {
		return nil
	}
	// The layout-4 table and journal_entries are created by
	// journalSchemaV4, the triggers and the journal view by
	// migrateJournalRoutes, which follows in the same transaction.
	return journalRebuild{what: "names", old: "journal_rows_v3", schema: journalSchemaV4, fill: []journalStep{
		{"enter the names", `INSERT OR IGNORE INTO journal_names (name)
		SELECT sender FROM journal_rows_v3 UNION SELECT recipient FROM journal_rows_v3
		UNION SELECT listener FROM journal_rows_v3 UNION SELECT root FROM journal_rows_v3
		UNION SELECT profile FROM journal_rows_v3 WHERE profile IS NOT NULL`},
		// The views were created over the new, empty table; they read it
		// once the rows are in.
		{"copy the rows", `INSERT INTO journal_rows (` + rowColumnsV4 + `)
		SELECT seq, time_ns, thread, conversation, direction, kind, ` + nameIDOf("o.sender") + `, ` + nameIDOf("o.recipient") + `,
			` + nameIDOf("o.listener") + `, ` + nameIDOf("o.root") + `, sha256, envelope, diagnostics,
			CASE WHEN o.profile IS NULL THEN NULL ELSE ` + nameIDOf("o.profile") + ` END
		FROM journal_rows_v3 AS o ORDER BY seq`},
	}, check: `SELECT count(*) FROM journal_rows_v3 AS o
		WHERE NOT EXISTS (SELECT 1 FROM journal_entries AS n WHERE n.seq = o.seq AND n.sender = o.sender
			AND n.recipient = o.recipient AND n.listener = o.listener AND n.root = o.root
			AND n.profile IS o.profile AND n.envelope = o.envelope AND n.sha256 = o.sha256)`}.run(ctx, tx)
}
