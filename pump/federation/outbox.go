package federation

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// DatabaseFileName is the federation state file in the data directory.
const DatabaseFileName = "federation.db"

// seenRetention is how long the hash of a received envelope is kept; older
// envelopes are refused as stale (staleAfter) so a replay cannot outlive it.
const (
	seenRetention = 24 * time.Hour
	staleAfter    = seenRetention - time.Hour
	// futureSkew is how far in the future a sent time may be.
	futureSkew = 5 * time.Minute
)

// db is the federation state: the outbox of every gateway (envelopes not
// yet acknowledged by the peer), the hashes of the envelopes received, and
// the imported capabilities learnt from peers (so imports are registered at
// the next start even while a peer is down).
type db struct {
	sql *sql.DB
}

// openDB opens (creating) dir/federation.db; dir "" keeps the state in
// memory (an organism without a data directory).
func openDB(dir string) (*db, error) {
	dsn := "file:federation?mode=memory&cache=shared&_pragma=busy_timeout(10000)"
	if dir != "" {
		path := filepath.Join(dir, DatabaseFileName)
		dsn = "file:" + (&url.URL{Path: path}).EscapedPath() +
			"?_pragma=busy_timeout(10000)&_journal_mode=WAL&_pragma=synchronous(NORMAL)&_txlock=immediate"
	} else {
		dsn = "file:federation-" + fmt.Sprint(time.Now().UnixNano()) + "?mode=memory&cache=shared&_pragma=busy_timeout(10000)"
	}
	s, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("federation: open state: %w", err)
	}
	s.SetMaxOpenConns(1)
	s.SetConnMaxLifetime(0)
	s.SetConnMaxIdleTime(0)
	_, err = s.Exec(`
CREATE TABLE IF NOT EXISTS outbox (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	gateway TEXT NOT NULL,
	id TEXT NOT NULL UNIQUE,
	env BLOB NOT NULL,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS seen (
	hash BLOB PRIMARY KEY,
	at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_at ON seen(at);
CREATE TABLE IF NOT EXISTS imports (
	gateway TEXT NOT NULL,
	tag TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	xsd BLOB NOT NULL,
	PRIMARY KEY (gateway, tag)
);`)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("federation: create state: %w", err), s.Close())
	}
	return &db{sql: s}, nil
}

func (d *db) close() error { return d.sql.Close() }

// queued is one outbox entry.
type queued struct {
	seq int64
	id  string
	env []byte
}

// enqueue stores a signed envelope for gateway gw.
func (d *db) enqueue(gw, id string, env []byte, now time.Time) (int64, error) {
	r, err := d.sql.Exec(`INSERT INTO outbox (gateway, id, env, created) VALUES (?, ?, ?, ?)`, gw, id, env, now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("federation: outbox: %w", err)
	}
	return r.LastInsertId()
}

// pending lists gw's outbox in order.
func (d *db) pending(gw string) ([]queued, error) {
	rows, err := d.sql.Query(`SELECT seq, id, env FROM outbox WHERE gateway = ? ORDER BY seq`, gw)
	if err != nil {
		return nil, fmt.Errorf("federation: outbox: %w", err)
	}
	defer rows.Close()
	var out []queued
	for rows.Next() {
		var q queued
		if err := rows.Scan(&q.seq, &q.id, &q.env); err != nil {
			return nil, fmt.Errorf("federation: outbox: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// acked removes an acknowledged entry.
func (d *db) acked(id string) error {
	if _, err := d.sql.Exec(`DELETE FROM outbox WHERE id = ?`, id); err != nil {
		return fmt.Errorf("federation: outbox: %w", err)
	}
	return nil
}

// seen records the hash of a received envelope and reports whether it was
// recorded before (a duplicate). Hashes older than seenRetention are swept.
func (d *db) seen(env []byte, now time.Time) (dup bool, err error) {
	h := sha256.Sum256(env)
	r, err := d.sql.Exec(`INSERT OR IGNORE INTO seen (hash, at) VALUES (?, ?)`, h[:], now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("federation: seen: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("federation: seen: %w", err)
	}
	return n == 0, nil
}

// forget removes the hash of an envelope that was not delivered after all
// (so a resend is processed).
func (d *db) forget(env []byte) {
	h := sha256.Sum256(env)
	_, _ = d.sql.Exec(`DELETE FROM seen WHERE hash = ?`, h[:])
}

// sweep drops the hashes older than seenRetention.
func (d *db) sweep(now time.Time) error {
	_, err := d.sql.Exec(`DELETE FROM seen WHERE at < ?`, now.Add(-seenRetention).UnixNano())
	return err
}

// imported is a capability learnt from a peer.
type imported struct {
	Tag, Name, Description string
	XSD                    []byte
}

// saveImports replaces gw's remembered imports.
func (d *db) saveImports(ctx context.Context, gw string, list []imported) error {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("federation: imports: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.Exec(`DELETE FROM imports WHERE gateway = ?`, gw); err != nil {
		return fmt.Errorf("federation: imports: %w", err)
	}
	for _, im := range list {
		if _, err := tx.Exec(`INSERT INTO imports (gateway, tag, name, description, xsd) VALUES (?, ?, ?, ?, ?)`,
			gw, im.Tag, im.Name, im.Description, im.XSD); err != nil {
			return fmt.Errorf("federation: imports: %w", err)
		}
	}
	return tx.Commit()
}

// loadImports returns gw's remembered imports.
func (d *db) loadImports(gw string) ([]imported, error) {
	rows, err := d.sql.Query(`SELECT tag, name, description, xsd FROM imports WHERE gateway = ? ORDER BY tag`, gw)
	if err != nil {
		return nil, fmt.Errorf("federation: imports: %w", err)
	}
	defer rows.Close()
	var out []imported
	for rows.Next() {
		var im imported
		if err := rows.Scan(&im.Tag, &im.Name, &im.Description, &im.XSD); err != nil {
			return nil, fmt.Errorf("federation: imports: %w", err)
		}
		out = append(out, im)
	}
	return out, rows.Err()
}
