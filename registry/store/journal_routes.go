package store

import (
	"context"
	"database/sql"
	"fmt"
)

// A journal row stores what it shares with the other rows of its hop
// — direction, kind, sender, recipient, listener, root tag and profile —
// as one id into journal_routes, which holds each distinct combination
// once (its names as journal_names ids). A row binds eight values instead
// of fourteen, SQLite builds a record of eight columns without a CASE
// naming direction and kind, an empty diagnostics is stored as NULL, and
// journal_entries joins the route and its names again, so the journal view
// reads them as text columns.
//
// The writer keeps the route → id map in memory (journalRoutes, an
// idCache). Routes are never changed or deleted (triggers refuse both), and
// Verify reports a row whose route or name is missing.

// journalRoutesSchema is journal_routes and journal_entries, the journal's
// rows with their route's direction, kind and names as text: what every
// reader of the package selects entryColumns from. The route of an entry
// migrated from the legacy layout has a NULL profile (not recorded).
const journalRoutesSchema = `
CREATE TABLE IF NOT EXISTS journal_routes (
	id        INTEGER PRIMARY KEY,
	direction TEXT    NOT NULL,
	kind      TEXT    NOT NULL,
	sender    INTEGER NOT NULL,
	recipient INTEGER NOT NULL,
	listener  INTEGER NOT NULL,
	root      INTEGER NOT NULL,
	profile   INTEGER,
	UNIQUE (direction, kind, sender, recipient, listener, root, profile)
);
CREATE TRIGGER IF NOT EXISTS journal_routes_immutable_update BEFORE UPDATE ON journal_routes
BEGIN
	SELECT RAISE(ABORT, 'journal routes are immutable');
END;
CREATE TRIGGER IF NOT EXISTS journal_routes_immutable_delete BEFORE DELETE ON journal_routes
BEGIN
	SELECT RAISE(ABORT, 'journal routes are immutable');
END;
CREATE VIEW IF NOT EXISTS journal_entries AS SELECT r.seq, r.time_ns, r.thread, r.conversation,
	coalesce(ro.direction, '') AS direction, coalesce(ro.kind, '') AS kind, coalesce(s.name, '') AS sender,
	coalesce(t.name, '') AS recipient, coalesce(l.name, '') AS listener, coalesce(o.name, '') AS root, r.sha256,
	r.envelope, coalesce(r.diagnostics, '') AS diagnostics, p.name AS profile
FROM journal_rows AS r
	LEFT JOIN journal_routes AS ro ON ro.id = r.route
	LEFT JOIN journal_names AS s ON s.id = ro.sender
	LEFT JOIN journal_names AS t ON t.id = ro.recipient
	LEFT JOIN journal_names AS l ON l.id = ro.listener
	LEFT JOIN journal_names AS o ON o.id = ro.root
	LEFT JOIN journal_names AS p ON p.id = ro.profile;`

// routeKey is a journal route: what an entry shares with the other
// entries of its hop.
type routeKey struct {
	direction                               Direction
	kind                                    Kind
	sender, recipient, listener, root, prof string
}

// routeOf returns the route of e.
func routeOf(e *Entry) routeKey {
	return routeKey{e.Direction, e.Kind, e.From, e.To, e.Listener, e.PayloadTag, e.Profile}
}

// maxCachedRoutes bounds the writer's route → id map, as maxCachedNames
// bounds the names. (A variable for the tests.)
var maxCachedRoutes = 1 << 14

// journalRoutes is the writer's route → id map of journal_routes.
type journalRoutes = idCache[routeKey]

// loadJournalRoutes reads journal_routes (up to maxCachedRoutes of them,
// leaving out the migrated routes without a profile, which the writer
// never journals) and the next free id.
func loadJournalRoutes(ctx context.Context, q *sql.Conn) (journalRoutes, error) {
	r := newIDCache[routeKey](&maxCachedRoutes)
	err := eachRow(ctx, q, `SELECT ro.id, ro.direction, ro.kind, s.name, t.name, l.name, o.name, p.name
		FROM journal_routes AS ro
			JOIN journal_names AS s ON s.id = ro.sender
			JOIN journal_names AS t ON t.id = ro.recipient
			JOIN journal_names AS l ON l.id = ro.listener
			JOIN journal_names AS o ON o.id = ro.root
			JOIN journal_names AS p ON p.id = ro.profile
		ORDER BY ro.id`, nil, func(rows *sql.Rows) error {
		var (
			id        int64
			dir, kind string
			k         routeKey
		)
		if err := rows.Scan(&id, &dir, &kind, &k.sender, &k.recipient, &k.listener, &k.root, &k.prof); err != nil {
			return err
		}
		var derr, kerr error
		k.direction, derr = ParseDirection(dir)
		k.kind, kerr = ParseKind(kind)
		if derr == nil && kerr == nil {
			r.keep(k, id)
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("store: read journal routes: %w", err)
	}
	if err := q.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM journal_routes`).Scan(&r.next); err != nil {
		return r, fmt.Errorf("store: read journal routes: %w", err)
	}
	r.txNext = r.next
	return r, nil
}

// routeID returns the id of e's route in journal_routes; a new route gets
// the next id and is entered by the next insert, inside the open
// transaction (after its names).
func (w *writer) routeID(e *Entry) (int64, error) {
	k := routeOf(e)
	if id, ok := w.routes.get(k); ok {
		return id, nil
	}
	var names [5]int64
	for i, n := range [...]string{k.sender, k.recipient, k.listener, k.root, k.prof} {
		id, err := w.nameID(n)
		if err != nil {
			return 0, err
		}
		names[i] = id
	}
	if w.routes.full() {
		ids, err := w.queryInt64s(`SELECT id FROM journal_routes WHERE direction = ? AND kind = ? AND sender = ?
			AND recipient = ? AND listener = ? AND root = ? AND profile = ?`, k.direction.String(), k.kind.String(),
			names[0], names[1], names[2], names[3], names[4])
		if err != nil {
			return 0, fmt.Errorf("store: look up journal route: %w", err)
		}
		if len(ids) == 1 {
			return ids[0], nil
		}
	}
	id := w.routes.add(k)
	w.routes.fresh = append(w.routes.fresh, id, k.direction.String(), k.kind.String(), names[0], names[1], names[2],
		names[3], names[4])
	return id, nil
}

// routesInsert enters new routes into journal_routes.
var routesInsert = newRowStatement(`INSERT INTO journal_routes (id, direction, kind, sender, recipient, listener, root,
	profile) VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?)`, ``, 8)
