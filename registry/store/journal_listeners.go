package store

import (
	"context"
	"database/sql"
	"fmt"
)

// journalListenersV4 creates the table of the listeners that have journal
// entries and their retention sweep cursors (migration 4), filled from the
// existing journal through the (listener, time_ns) index before the journal
// rebuild drops it.
//
// swept_seq is the sweep cursor of the listener: no entry of the listener
// with a seq at or below it is left for its retention policy to delete (see
// retention_walk.go). The writer adds a row for each listener it journals
// for the first time; rows are never deleted.
const journalListenersV4 = `
CREATE TABLE journal_listeners (
	listener  TEXT    PRIMARY KEY,
	swept_seq INTEGER NOT NULL DEFAULT 0 CHECK (swept_seq >= 0)
) WITHOUT ROWID;
INSERT INTO journal_listeners (listener) SELECT DISTINCT listener FROM journal;
`

// listenerInsert registers listeners that have journal entries.
var listenerInsert = newRowStatement(`INSERT OR IGNORE INTO journal_listeners (listener) VALUES `, `(?)`, ``, 1)

// journalListeners tracks, on the writer goroutine, which listeners are
// in journal_listeners, so that registering a listener costs a statement
// only the first time the writer journals it.
type journalListeners struct {
	known map[string]struct{} // committed in journal_listeners
	tx    map[string]struct{} // inserted by the open transaction
	fresh []any               // noted, not yet inserted
}

// note records that the open transaction journals an entry of listener.
func (l *journalListeners) note(listener string) {
	if _, ok := l.known[listener]; ok {
		return
	}
	if _, ok := l.tx[listener]; ok {
		return
	}
	if l.tx == nil {
		l.tx = make(map[string]struct{})
	}
	l.tx[listener] = struct{}{}
	l.fresh = append(l.fresh, listener)
}

// committed makes the registrations of the committed transaction known.
func (l *journalListeners) committed() {
	if len(l.tx) == 0 {
		return
	}
	if l.known == nil {
		l.known = make(map[string]struct{})
	}
	for name := range l.tx {
		l.known[name] = struct{}{}
	}
	l.rolledBack()
}

// rolledBack forgets the registrations of the open transaction.
func (l *journalListeners) rolledBack() {
	clear(l.tx)
	clear(l.fresh)
	l.fresh = l.fresh[:0]
}

// registerListeners inserts the listeners noted since the last call. It
// runs inside the open transaction.
func (w *writer) registerListeners() error {
	l := &w.listeners
	if len(l.fresh) == 0 {
		return nil
	}
	if _, err := w.execRows(listenerInsert, len(l.fresh), l.fresh); err != nil {
		return fmt.Errorf("store: register journal listeners: %w", err)
	}
	clear(l.fresh)
	l.fresh = l.fresh[:0]
	return nil
}

// sweepCursor is one journal_listeners row.
type sweepCursor struct {
	listener string
	swept    int64
}

// sweepCursors reads every journal listener and its sweep cursor.
func (s *Store) sweepCursors(ctx context.Context) ([]sweepCursor, error) {
	var out []sweepCursor
	err := s.read(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT listener, swept_seq FROM journal_listeners ORDER BY listener`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c sweepCursor
			if err := rows.Scan(&c.listener, &c.swept); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: sweep: list listeners: %w", err)
	}
	return out, nil
}
