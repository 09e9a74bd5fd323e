package federation

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// DatabaseFileName is the federation state file in the data directory.
const DatabaseFileName = "federation.db"

// futureSkew is how far in the future a sent time may be.
const futureSkew = 5 * time.Minute

// retention is how long the hash of a received envelope is kept (the seen
// table grows with the link's rate for that long); an envelope sent longer
// ago than stale is refused, so a replay cannot outlive its hash. Both
// follow the longest call_timeout: an envelope still waiting in an outbox
// after that long belongs to a call its caller gave up on.
func retention(callTimeout time.Duration) (keep, stale time.Duration) {
	keep = max(time.Hour, 4*callTimeout)
	return keep, keep - 10*time.Minute
}

// db is the federation state: the outbox of every gateway (envelopes not
// yet acknowledged by the peer), the hashes of the envelopes received, and
// the imported capabilities learnt from peers (so imports are registered at
// the next start even while a peer is down).
type db struct {
	sql *sql.DB
	// w writes in group commits (commit.go).
	w *committer
	// reads serves the receive path's lookups (seenQ, receivedQ, prepared
	// on it): for a state on disk a pool of its own, so a lookup reads the
	// last committed state (WAL) instead of waiting for the write
	// connection while a group commit holds it; in memory, sql itself.
	reads            *sql.DB
	seenQ, receivedQ *sql.Stmt
	// receivedSince is when the received table began in a state that had
	// received calls before (the zero Unix time for a state that began
	// with it): a call sent before it may have been received without a
	// row there.
	receivedSince time.Time
}

// openDB opens (creating) dir/federation.db; dir "" keeps the state in
// memory (an organism without a data directory).
func openDB(dir string, log *slog.Logger) (*db, error) {
	var dsn, readDSN string
	if dir != "" {
		path := filepath.Join(dir, DatabaseFileName)
		if err := store.PrepareDatabaseFile(path, log); err != nil { // the owner's alone: 0600
			return nil, fmt.Errorf("federation: open state: %w", err)
		}
		dsn = "file:" + (&url.URL{Path: path}).EscapedPath() +
			"?_pragma=busy_timeout(10000)&_journal_mode=WAL&_pragma=synchronous(NORMAL)&_txlock=immediate"
		readDSN = "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(10000)&_pragma=query_only(1)"
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
	// A state made before the received table existed may have received
	// calls the table lacks; a new one has received none.
	var existed int
	if err := s.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'outbox'`).Scan(&existed); err != nil {
		return nil, errors.Join(fmt.Errorf("federation: open state: %w", err), s.Close())
	}
	since := int64(0)
	if existed > 0 {
		since = time.Now().UnixNano()
	}
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
CREATE TABLE IF NOT EXISTS served (
	conv TEXT PRIMARY KEY,
	gateway TEXT NOT NULL,
	link_thread TEXT NOT NULL,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
	link_thread TEXT PRIMARY KEY,
	gateway TEXT NOT NULL,
	caller_thread TEXT NOT NULL,
	digest BLOB NOT NULL,
	answer BLOB,
	created INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_caller ON calls(gateway, caller_thread, digest);
CREATE TABLE IF NOT EXISTS imports (
	gateway TEXT NOT NULL,
	tag TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	xsd BLOB NOT NULL,
	PRIMARY KEY (gateway, tag)
);
CREATE TABLE IF NOT EXISTS received (
	conv TEXT PRIMARY KEY,
	at INTEGER NOT NULL,
	done INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS received_at ON received(at);
CREATE TABLE IF NOT EXISTS received_since (at INTEGER NOT NULL);`)
	if err == nil {
		_, err = s.Exec(`INSERT INTO received_since (at) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM received_since)`, since)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("federation: create state: %w", err), s.Close())
	}
	d := &db{sql: s, reads: s}
	if readDSN != "" {
		if d.reads, err = sql.Open("sqlite", readDSN); err != nil {
			return nil, errors.Join(fmt.Errorf("federation: open state: %w", err), s.Close())
		}
		d.reads.SetMaxOpenConns(max(2, runtime.GOMAXPROCS(0)))
		d.reads.SetMaxIdleConns(max(2, runtime.GOMAXPROCS(0)))
	}
	fail := func(err error) (*db, error) {
		err = fmt.Errorf("federation: state: %w", err)
		if d.reads != s {
			err = errors.Join(err, d.reads.Close())
		}
		return nil, errors.Join(err, s.Close())
	}
	var began int64
	if err := s.QueryRow(`SELECT at FROM received_since`).Scan(&began); err != nil {
		return fail(err)
	}
	d.receivedSince = time.Unix(0, began)
	if d.seenQ, err = d.reads.Prepare(`SELECT 1 FROM seen WHERE hash = ?`); err == nil {
		d.receivedQ, err = d.reads.Prepare(`SELECT done FROM received WHERE conv = ?`)
	}
	if err == nil {
		d.w, err = newCommitter(s)
	}
	if err != nil {
		return fail(err)
	}
	return d, nil
}

// close commits the writes still queued and closes the state.
func (d *db) close() error {
	d.w.close()
	_ = d.seenQ.Close()
	_ = d.receivedQ.Close()
	var err error
	if d.reads != d.sql {
		err = d.reads.Close()
	}
	return errors.Join(err, d.sql.Close())
}

// queued is one outbox entry.
type queued struct {
	seq int64
	id  string
	env []byte
}

// enqueue stores a signed envelope for gateway gw; with a call, the call's
// record too, in the same group commit (a call is never recorded without
// its envelope, nor sent without its record). It returns once both are
// durable.
func (d *db) enqueue(gw, id string, env []byte, now time.Time, c *callRecord) (int64, error) {
	var seq int64
	err := d.w.do(func(s *stmts) error {
		if c != nil {
			if _, err := s.record.Exec(id, gw, c.callerThread, c.digest, now.UnixNano()); err != nil {
				return fmt.Errorf("federation: calls: %w", err)
			}
		}
		r, err := s.enqueue.Exec(gw, id, env, now.UnixNano())
		if err == nil {
			seq, err = r.LastInsertId()
		}
		if err != nil {
			if c != nil { // no record without its envelope
				_, _ = s.callDone.Exec(id)
			}
			return fmt.Errorf("federation: outbox: %w", err)
		}
		return nil
	})
	return seq, err
}

// enqueueThen stores a signed envelope that is not a call for gateway gw
// in the next group commit without waiting; done is told when it is
// durable (or failed), on the committer's goroutine.
func (d *db) enqueueThen(gw, id string, env []byte, now time.Time, done func(error)) {
	d.w.submit(&write{apply: func(s *stmts) error {
		if _, err := s.enqueue.Exec(gw, id, env, now.UnixNano()); err != nil {
			return fmt.Errorf("federation: outbox: %w", err)
		}
		return nil
	}, done: done})
}

// callRecord is what is kept of a call this side made, so that after a
// restart the re-delivered message that made it adopts it instead of
// calling again.
type callRecord struct {
	callerThread string
	digest       []byte
}

// openCalls lists the recorded calls of gw made on callerThread with
// digest, oldest first, with the answer each already has (nil if none).
func (d *db) openCalls(gw, callerThread string, digest []byte) (ids []string, answers [][]byte, err error) {
	rows, err := d.sql.Query(`SELECT link_thread, answer FROM calls WHERE gateway = ? AND caller_thread = ? AND digest = ?
		ORDER BY created`, gw, callerThread, digest)
	if err != nil {
		return nil, nil, fmt.Errorf("federation: calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var a []byte
		if err := rows.Scan(&id, &a); err != nil {
			return nil, nil, fmt.Errorf("federation: calls: %w", err)
		}
		ids, answers = append(ids, id), append(answers, a)
	}
	return ids, answers, rows.Err()
}

// keepAnswer stores the answer of a call gw recorded and nobody waits for
// now; it reports whether such a call exists.
func (d *db) keepAnswer(gw, linkThread string, env []byte) (bool, error) {
	r, err := d.sql.Exec(`UPDATE calls SET answer = ? WHERE link_thread = ? AND gateway = ? AND answer IS NULL`,
		env, linkThread, gw)
	if err != nil {
		return false, fmt.Errorf("federation: calls: %w", err)
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// callDone forgets a call whose caller got its answer (or gave up), in a
// coming group commit (forcing none) (a record left by a crash is swept, or adopted); done
// is told the outcome.
func (d *db) callDone(linkThread string, done func(error)) {
	d.w.later(func(s *stmts) error {
		if _, err := s.callDone.Exec(linkThread); err != nil {
			return fmt.Errorf("federation: calls: %w", err)
		}
		return nil
	}, done)
}

// hasCalls reports whether gw has recorded calls (made before this start).
func (d *db) hasCalls(gw string) (bool, error) {
	var n int
	if err := d.sql.QueryRow(`SELECT EXISTS (SELECT 1 FROM calls WHERE gateway = ?)`, gw).Scan(&n); err != nil {
		return false, fmt.Errorf("federation: calls: %w", err)
	}
	return n == 1, nil
}

// serveBegin records, durably, that conversation conv serves the peer's
// call on linkThread through gw, and that its call is being received
// (before the call is injected; callInjected marks it done after).
func (d *db) serveBegin(conv, gw, linkThread string, now time.Time) error {
	return d.w.do(func(s *stmts) error {
		if _, err := s.received.Exec(conv, now.UnixNano()); err != nil {
			return fmt.Errorf("federation: received: %w", err)
		}
		if _, err := s.serveBegin.Exec(conv, gw, linkThread, now.UnixNano()); err != nil {
			_, _ = s.forgetReceived.Exec(conv)
			return fmt.Errorf("federation: served: %w", err)
		}
		return nil
	})
}

// serveEnd forgets a served conversation (in the next group commit); with
// refused, the call was not injected after all, so conv is forgotten as
// received too.
func (d *db) serveEnd(conv string, refused bool, onErr func(error)) {
	d.w.async(func(s *stmts) error {
		if _, err := s.serveEnd.Exec(conv); err != nil {
			return fmt.Errorf("federation: served: %w", err)
		}
		if refused {
			if _, err := s.forgetReceived.Exec(conv); err != nil {
				return fmt.Errorf("federation: received: %w", err)
			}
		}
		return nil
	}, onErr)
}

// Whether a call was received (received's answer).
const (
	// callNew: no call for the conversation was received.
	callNew = iota
	// callDone: its call was injected and its journal record committed.
	callDone
	// callUncertain: its call was being injected when the organism
	// stopped (or its injection failed midway): only the journal knows.
	callUncertain
)

// received says whether a call for conversation conv was received within
// the retention: callNew, callDone or callUncertain.
func (d *db) received(conv string) (int, error) {
	var done int
	err := d.receivedQ.QueryRow(conv).Scan(&done)
	if errors.Is(err, sql.ErrNoRows) {
		return callNew, nil
	}
	if err != nil {
		return 0, fmt.Errorf("federation: received: %w", err)
	}
	if done == 1 {
		return callDone, nil
	}
	return callUncertain, nil
}

// servedAll lists the conversations serving calls (conv → gateway, link
// thread), to answer them after a restart.
func (d *db) servedAll() (map[string][2]string, error) {
	rows, err := d.sql.Query(`SELECT conv, gateway, link_thread FROM served`)
	if err != nil {
		return nil, fmt.Errorf("federation: served: %w", err)
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var conv, gw, lt string
		if err := rows.Scan(&conv, &gw, &lt); err != nil {
			return nil, fmt.Errorf("federation: served: %w", err)
		}
		out[conv] = [2]string{gw, lt}
	}
	return out, rows.Err()
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

// acked removes an acknowledged entry in the next group commit (after a
// crash before it, the entry is sent again and the peer acknowledges the
// duplicate).
func (d *db) acked(id string, onErr func(error)) {
	d.w.async(func(s *stmts) error {
		if _, err := s.acked.Exec(id); err != nil {
			return fmt.Errorf("federation: outbox: %w", err)
		}
		return nil
	}, onErr)
}

// seen reports whether a received envelope was processed before (its hash
// recorded by markSeen). Old hashes are swept (retention).
func (d *db) seen(env []byte) (bool, error) {
	h := sha256.Sum256(env)
	var one int
	err := d.seenQ.QueryRow(h[:]).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("federation: seen: %w", err)
	}
	return true, nil
}

// callInjected records, once the journal holds the call that began conv,
// that its conversation is done being received; done is told when that is
// durable (the acknowledgement waits for it). The mark forces no commit of
// its own: it rides with the next write somebody waits for (or after
// lazyDelay), since only the acknowledgement, not the answer, waits on it.
// A call's hash is not recorded: its received row, kept as long, refuses
// its copies.
func (d *db) callInjected(conv string, done func(error)) {
	d.w.later(func(s *stmts) error {
		if _, err := s.injected.Exec(conv); err != nil {
			return fmt.Errorf("federation: received: %w", err)
		}
		return nil
	}, done)
}

// markSeen records the hash of an envelope once it was processed — after,
// never before: a crash in between leaves a resend to be processed (and a
// call's conversation, which the received table holds, still catches a
// second copy), rather than a hash that refuses a message that never
// arrived. done is told when the hash is durable (the acknowledgement
// waits for it), in a group commit with the link's other writes: the hash
// forces no commit of its own (see callInjected).
func (d *db) markSeen(env []byte, now time.Time, done func(error)) {
	h := sha256.Sum256(env)
	d.w.later(func(s *stmts) error {
		if _, err := s.seen.Exec(h[:], now.UnixNano()); err != nil {
			return fmt.Errorf("federation: seen: %w", err)
		}
		return nil
	}, done)
}

// sweep drops the hashes and received calls older than keep, and the call and served records
// older than records (calls whose message was never re-delivered,
// conversations that never completed).
func (d *db) sweep(now time.Time, keep, records time.Duration) error {
	_, err := d.sql.Exec(`DELETE FROM seen WHERE at < ?`, now.Add(-keep).UnixNano())
	if err == nil {
		_, err = d.sql.Exec(`DELETE FROM received WHERE at < ?`, now.Add(-keep).UnixNano())
	}
	if err == nil {
		_, err = d.sql.Exec(`DELETE FROM calls WHERE created < ?`, now.Add(-records).UnixNano())
	}
	if err == nil {
		_, err = d.sql.Exec(`DELETE FROM served WHERE created < ?`, now.Add(-records).UnixNano())
	}
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
