package federation

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

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
// yet acknowledged by the peer), the calls made, the conversations received
// and served, the hashes of the envelopes received, and the imported
// capabilities learnt from peers (so imports are registered at the next
// start even while a peer is down). Its tables (schema.go) live in the
// organism's store, written by the store's writer in the journal's group
// commits; without a store, in memory.
type db struct {
	b backend
	// mu guards closed; submitters hold it for reading while they submit,
	// so close follows every write submitted before it.
	mu     sync.RWMutex
	closed bool
	// seenQ and receivedQ serve the receive path's lookups, prepared on
	// the backend's read pool.
	seenQ, receivedQ *sql.Stmt
	// recent answers those lookups from memory for the envelopes sent
	// lately (recent.go); set by the Manager.
	recent *recent
	// nextSeq is the last outbox seq handed out (the outbox's order).
	nextSeq atomic.Int64
	// deferred holds the writes of the records and outbox entries of the
	// calls named by their message, until they have been open for
	// callRowsDelay (deferred.go); callRowsDelay is that delay (tests
	// lengthen it).
	deferred      deferred
	callRowsDelay time.Duration
	// epoch is the state's random id (federation_epoch).
	epoch []byte
	// rows gathers the rows of the writes made one per envelope for the
	// end of their run (rowbatch.go): the outbox entries (insertOutbox)
	// and their deletions (acked), the seen hashes (markSeenHash), the
	// received and served rows (serveRows) with the done marks
	// (callInjected) and deletions (serveEnd, enqueueAnswerThen), the
	// call records (enqueueCallThen) and their deletions (callDone).
	rows rowSet
	outboxRows, ackedRows, seenRows, receivedRows, servedRows, callRows, doneRows,
	unservedRows, unreceivedRows, callDoneRows *rowBatch
	// legacySeen says the seen table may hold rows keyed by the hash
	// alone (federation_seen_legacy), which the sweep and the load of
	// recent rows look for by scanning the table.
	legacySeen atomic.Bool
	// receivedSince is when the received table began in a state that had
	// received calls before (the zero Unix time for a state that began
	// with it): a call sent before it may have been received without a
	// row there.
	receivedSince time.Time
}

// openDB opens the federation state in st, the organism's store: it
// applies the schema and moves the rows of a federation.db an earlier
// version left in st's directory into it (migrate.go). A nil st keeps the
// state in memory (an organism without a data directory).
func openDB(st *store.Store, log *slog.Logger) (*db, error) {
	if log == nil {
		log = slog.Default()
	}
	var b backend
	if st != nil {
		if err := st.AddSchema(context.Background(), "federation", schema); err != nil {
			return nil, fmt.Errorf("federation: open state: %w", err)
		}
		if err := migrateFile(st, log); err != nil {
			return nil, err
		}
		b = &storeBackend{st: st, last: -1}
	} else {
		// A name of its own: two organisms in one process (opened in the
		// same nanosecond, which a clock's resolution allows) must not share
		// one shared-cache database.
		s, err := sql.Open("sqlite", "file:federation-"+uuid.NewString()+
			"?mode=memory&cache=shared&_pragma=busy_timeout(10000)")
		if err != nil {
			return nil, fmt.Errorf("federation: open state: %w", err)
		}
		s.SetMaxOpenConns(1)
		s.SetConnMaxLifetime(0)
		s.SetConnMaxIdleTime(0)
		if _, err := s.Exec(schema); err != nil {
			return nil, errors.Join(fmt.Errorf("federation: create state: %w", err), s.Close())
		}
		b = &memBackend{db: s}
	}
	d := &db{b: b, callRowsDelay: callRowsDelay,
		outboxRows: newRowBatch("outbox", `INSERT INTO federation_outbox (seq, gateway, id, env, created) VALUES `,
			`(?, ?, ?, ?, ?)`, ``, 5),
		ackedRows: newRowBatch("outbox", `DELETE FROM federation_outbox WHERE seq IN (`, `?`, `)`, 1),
		seenRows:  newRowBatch("seen", `INSERT OR IGNORE INTO federation_seen (hash, at) VALUES `, `(?, ?)`, ``, 2),
		receivedRows: newRowBatch("received", `INSERT OR IGNORE INTO federation_received (conv, at) VALUES `,
			`(?, ?)`, ``, 2).keyed("received", false),
		servedRows: newRowBatch("served", `INSERT OR REPLACE INTO federation_served (conv, gateway, link_thread, created) VALUES `,
			`(?, ?, ?, ?)`, ``, 4).keyed("served", false),
		callRows: newRowBatch("calls", `INSERT INTO federation_calls (link_thread, gateway, caller_thread, digest, created) VALUES `,
			`(?, ?, ?, ?, ?)`, ` ON CONFLICT (link_thread) DO NOTHING`, 5).keyed("calls", false),
		doneRows: newRowBatch("received", `UPDATE federation_received SET done = 1 WHERE conv IN (`, `?`, `)`, 1),
		unservedRows: newRowBatch("served", `DELETE FROM federation_served WHERE conv IN (`, `?`, `)`, 1).
			keyed("served", true),
		unreceivedRows: newRowBatch("received", `DELETE FROM federation_received WHERE conv IN (`, `?`, `)`, 1).
			keyed("received", true),
		callDoneRows: newRowBatch("calls", `DELETE FROM federation_calls WHERE link_thread IN (`, `?`, `)`, 1).
			keyed("calls", true)}
	// Inserts before done marks and deletions: the order they are
	// gathered in for any key (rowbatch.go).
	d.rows.batches = []*rowBatch{d.outboxRows, d.ackedRows, d.seenRows, d.receivedRows, d.servedRows, d.callRows,
		d.doneRows, d.unservedRows, d.unreceivedRows, d.callDoneRows}
	fail := func(err error) (*db, error) {
		return nil, errors.Join(fmt.Errorf("federation: state: %w", err), d.closeLookups(), b.close())
	}
	var began int64
	if err := b.reads().QueryRow(`SELECT at FROM federation_received_since`).Scan(&began); err != nil {
		return fail(err)
	}
	d.receivedSince = time.Unix(0, began)
	var legacy bool
	if err := b.reads().QueryRow(`SELECT EXISTS (SELECT 1 FROM federation_seen_legacy)`).Scan(&legacy); err != nil {
		return fail(err)
	}
	d.legacySeen.Store(legacy)
	if err := b.reads().QueryRow(`SELECT id FROM federation_epoch`).Scan(&d.epoch); err != nil {
		return fail(err)
	}
	var high int64
	if err := b.reads().QueryRow(`SELECT coalesce(max(seq), 0) FROM federation_outbox`).Scan(&high); err != nil {
		return fail(err)
	}
	d.nextSeq.Store(high)
	var err error
	// A hash under its key (seenKey), or one an earlier version recorded
	// under the hash alone.
	if d.seenQ, err = b.reads().Prepare(`SELECT 1 FROM federation_seen WHERE hash IN (?, ?) LIMIT 1`); err == nil {
		d.receivedQ, err = b.reads().Prepare(`SELECT done FROM federation_received WHERE conv = ?`)
	}
	if err != nil {
		return fail(err)
	}
	return d, nil
}

// closeLookups closes the prepared lookups.
func (d *db) closeLookups() error {
	var errs []error
	for _, s := range []*sql.Stmt{d.seenQ, d.receivedQ} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// close refuses the writes submitted from now on, waits until every write
// submitted before is durable (their done told) and closes the state (not
// the organism's store).
func (d *db) close() error {
	d.flushDeferred()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	err := d.b.write("close", func(execer) error { return nil })
	if errors.Is(err, store.ErrClosed) {
		err = nil // closed first: nothing queued is left to wait for
	}
	return errors.Join(err, d.closeLookups(), d.b.close())
}

// write runs fn in a transaction of the state and returns once it is
// durable.
func (d *db) write(name string, fn func(execer) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return errStateClosed
	}
	return d.b.write(name, d.stateTx(fn))
}

// stateTx adapts fn to see the rows gathered before it (stateTx).
func (d *db) stateTx(fn func(execer) error) func(execer) error {
	return func(tx execer) error { return fn(stateTx{execer: tx, rows: &d.rows}) }
}

// now runs fn in the next commit, which it forces, without waiting; done
// (when set) is told the outcome once durable and must not block.
func (d *db) now(name string, fn func(execer) error, done func(error)) {
	d.queue(name, fn, done, d.b.now)
}

// later is now without forcing a commit: fn rides with the next commit
// somebody waits for (backend.later).
func (d *db) later(name string, fn func(execer) error, done func(error)) {
	d.queue(name, fn, done, d.b.later)
}

// queue hands fn to the backend's enqueue (now or later) unless the state
// is closed, which done is told.
func (d *db) queue(name string, fn func(execer) error, done func(error),
	enqueue func(string, func(execer) error, func(error))) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		if done != nil {
			done(errStateClosed)
		}
		return
	}
	enqueue(name, d.stateTx(fn), done)
}

// onError adapts a logger of failures to a done.
func onError(onErr func(error)) func(error) {
	return func(err error) {
		if err != nil && onErr != nil {
			onErr(err)
		}
	}
}

// queued is one outbox entry.
type queued struct {
	seq int64
	id  string
	env []byte
}

// newSeq hands out the next outbox seq.
func (d *db) newSeq() int64 { return d.nextSeq.Add(1) }

// insertOutbox is the write of an outbox entry: gathered for the end of
// the run (rowSet), with the entries of the other writes of the run.
func (d *db) insertOutbox(tx execer, seq int64, gw, id string, env []byte, now time.Time) error {
	return d.rows.add(tx, d.outboxRows, seq, gw, id, env, now.UnixNano())
}

// enqueue stores a signed envelope for gateway gw under a new seq; with a
// call, the call's record too, in the same transaction (a call is never
// recorded without its envelope, nor sent without its record). It returns
// the seq once both are durable.
func (d *db) enqueue(gw, id string, env []byte, now time.Time, c *callRecord) (int64, error) {
	seq := d.newSeq()
	err := d.write("outbox", func(tx execer) error {
		if c != nil {
			if _, err := tx.Exec(`INSERT INTO federation_calls (link_thread, gateway, caller_thread, digest, created)
				VALUES (?, ?, ?, ?, ?)`, id, gw, c.callerThread, c.digest, now.UnixNano()); err != nil {
				return fmt.Errorf("federation: calls: %w", err)
			}
		}
		return d.insertOutbox(tx, seq, gw, id, env, now)
	})
	return seq, err
}

// enqueueCallThen stores the signed call env of gateway gw under seq
// (newSeq) with its record, in a coming commit that it does not force
// (the call may be on the link already: its id is one a re-delivery of
// the message that made it computes again, callid.go); done is told when
// both are durable (or failed), on the store's writer goroutine. A record
// there already (an answer kept for the call, onAnswer) is kept. The
// record's digest is left empty: such a call is adopted by its id, never
// by a digest (openCalls).
func (d *db) enqueueCallThen(seq int64, gw, id string, rec *callRecord, env []byte, now time.Time, write func() bool,
	done func(error)) {
	d.later("call", func(tx execer) error {
		if rec.row.write() {
			if err := d.rows.add(tx, d.callRows, id, gw, rec.callerThread, []byte{}, now.UnixNano()); err != nil {
				return err
			}
		}
		if !write() {
			return nil
		}
		return d.insertOutbox(tx, seq, gw, id, env, now)
	}, done)
}

// callByID looks up the recorded call linkThread of gw: whether it is
// recorded and the answer it has (nil if none).
func (d *db) callByID(gw, linkThread string) (found bool, answer []byte, err error) {
	err = d.b.reads().QueryRow(`SELECT answer FROM federation_calls WHERE link_thread = ? AND gateway = ?`,
		linkThread, gw).Scan(&answer)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("federation: calls: %w", err)
	}
	return true, answer, nil
}

// keepOrphan stores env, the answer to call linkThread of gw that has no
// record (its message was re-sent after a crash lost the record), for the
// re-delivered message that makes that call again; it returns once the
// answer is durable.
func (d *db) keepOrphan(gw, linkThread string, env []byte, now time.Time) error {
	return d.write("keep answer", func(tx execer) error {
		if _, err := tx.Exec(`INSERT INTO federation_calls (link_thread, gateway, caller_thread, digest, answer, created)
			VALUES (?, ?, '', x'', ?, ?) ON CONFLICT (link_thread) DO UPDATE SET answer = excluded.answer
			WHERE answer IS NULL`, linkThread, gw, env, now.UnixNano()); err != nil {
			return fmt.Errorf("federation: calls: %w", err)
		}
		return nil
	})
}

// enqueueThen stores a signed envelope that is not a call for gateway gw
// under seq (newSeq) in the next commit without waiting; done is told when
// it is durable (or failed), on the store's writer goroutine. Here and in
// enqueueCallThen and enqueueAnswerThen, write says whether the outbox
// row is still to be written when the writer comes to it (rowClaim: an
// acknowledgement may have made it useless).
func (d *db) enqueueThen(seq int64, gw, id string, env []byte, now time.Time, write func() bool, done func(error)) {
	d.now("outbox", func(tx execer) error {
		if !write() {
			return nil
		}
		return d.insertOutbox(tx, seq, gw, id, env, now)
	}, done)
}

// enqueueAnswerThen is enqueueThen for the answer (reply, huh or end) of
// served conversation conv, in a coming commit that it does not force: its
// served row goes in the same transaction, so a served row left after a
// restart says that no answer of its conversation was kept
// (Manager.resendAnswers), which the journal then gives again. Forcing a
// commit of its own would cost the callee a second commit per call, made
// while the answer crosses the link and the caller needs the CPU.
func (d *db) enqueueAnswerThen(seq int64, gw, id string, env []byte, now time.Time, conv string, write func() bool,
	done func(error)) {
	d.later("outbox", func(tx execer) error {
		if write() {
			if err := d.insertOutbox(tx, seq, gw, id, env, now); err != nil {
				return err
			}
		}
		return d.rows.add(tx, d.unservedRows, conv)
	}, done)
}

// callRecord is what is kept of a call this side made, so that after a
// restart the re-delivered message that made it adopts it instead of
// calling again.
type callRecord struct {
	callerThread string
	digest       []byte
	// byID marks a call named by its message's journal seq (callid.go):
	// adopted by its id, sent before its record commits (sendEarly).
	byID bool
	// row, for such a call, lets the end of its handling cancel the
	// record's insert when it has not run yet (rowClaim); deferred is the
	// write that will insert it, while it waits (deferred.go).
	row      rowClaim
	deferred *deferredWrite
}

// openCalls lists the recorded calls of gw made on callerThread with
// digest, oldest first, with the answer each already has (nil if none).
func (d *db) openCalls(gw, callerThread string, digest []byte) (ids []string, answers [][]byte, err error) {
	rows, err := d.b.reads().Query(`SELECT link_thread, answer FROM federation_calls
		WHERE gateway = ? AND caller_thread = ? AND digest = ? ORDER BY created`, gw, callerThread, digest)
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
	var n int64
	err := d.write("keep answer", func(tx execer) error {
		var err error
		n, err = tx.Exec(`UPDATE federation_calls SET answer = ? WHERE link_thread = ? AND gateway = ? AND answer IS NULL`,
			env, linkThread, gw)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("federation: calls: %w", err)
	}
	return n > 0, nil
}

// callDone forgets a call whose caller got its answer (or gave up), in a
// coming commit, forcing none (a record left by a crash is swept, or
// adopted); done is told the outcome.
func (d *db) callDone(linkThread string, done func(error)) {
	d.later("call done", func(tx execer) error {
		return d.rows.add(tx, d.callDoneRows, linkThread)
	}, done)
}

// hasCalls reports whether gw has recorded calls (made before this start).
func (d *db) hasCalls(gw string) (bool, error) {
	var n int
	if err := d.b.reads().QueryRow(`SELECT EXISTS (SELECT 1 FROM federation_calls WHERE gateway = ?)`, gw).Scan(&n); err != nil {
		return false, fmt.Errorf("federation: calls: %w", err)
	}
	return n == 1, nil
}

// serveRows records that conversation conv serves the peer's call on
// linkThread through gw, and that its call is being received (before the
// call is injected; callInjected marks it done after).
func (d *db) serveRows(conv, gw, linkThread string, now time.Time) func(execer) error {
	return func(tx execer) error {
		if err := d.rows.add(tx, d.receivedRows, conv, now.UnixNano()); err != nil {
			return err
		}
		return d.rows.add(tx, d.servedRows, conv, gw, linkThread, now.UnixNano())
	}
}

// serveBegin writes serveRows in a coming commit: with urgent, one it
// forces; else the next one somebody waits for — in an organism, the
// journal commit of the call injected next, which follows the rows in the
// store's queue, so they are durable once the call's journal record is and
// cost no commit of their own. done is told the outcome once durable.
func (d *db) serveBegin(conv, gw, linkThread string, now time.Time, urgent bool, done func(error)) {
	if urgent {
		d.now("serve", d.serveRows(conv, gw, linkThread, now), done)
	} else {
		d.later("serve", d.serveRows(conv, gw, linkThread, now), done)
	}
}

// serveEnd forgets a served conversation (in a coming commit); with
// refused, the call was not injected after all, so conv is forgotten as
// received too.
func (d *db) serveEnd(conv string, refused bool, onErr func(error)) {
	d.later("serve end", func(tx execer) error {
		if err := d.rows.add(tx, d.unservedRows, conv); err != nil || !refused {
			return err
		}
		return d.rows.add(tx, d.unreceivedRows, conv)
	}, onError(onErr))
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
	rows, err := d.b.reads().Query(`SELECT conv, gateway, link_thread FROM federation_served`)
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
	rows, err := d.b.reads().Query(`SELECT seq, id, env FROM federation_outbox WHERE gateway = ? ORDER BY seq`, gw)
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

// acked removes the acknowledged entry seq in a coming commit (after a
// crash before it, the entry is sent again and the peer acknowledges the
// duplicate).
func (d *db) acked(seq int64, onErr func(error)) {
	d.later("acked", func(tx execer) error {
		return d.rows.add(tx, d.ackedRows, seq)
	}, onError(onErr))
}

// seen reports whether a received envelope, sent at sent, was processed
// before (its hash recorded by markSeen). Old hashes are swept
// (retention).
func (d *db) seen(env []byte, sent time.Time) (bool, error) {
	return d.seenHash(sha256.Sum256(env), sent)
}

// seenHash is seen for the envelope whose sha256 is h.
func (d *db) seenHash(h [32]byte, sent time.Time) (bool, error) {
	var one int
	err := d.seenQ.QueryRow(seenKey(h, sent), h[:]).Scan(&one)
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
// durable. The mark forces no commit of its own: it rides with the next
// commit somebody waits for (or after the store's batch delay). A call's
// hash is not recorded: its received row, kept as long, refuses its
// copies.
func (d *db) callInjected(conv string, done func(error)) {
	d.later("received", func(tx execer) error {
		return d.rows.add(tx, d.doneRows, conv)
	}, done)
}

// markSeen records the hash of an envelope once it was processed — after,
// never before: a crash in between leaves a resend to be processed (and a
// call's conversation, which the received table holds, still catches a
// second copy), rather than a hash that refuses a message that never
// arrived. done is told when the hash is durable (the acknowledgement
// waits for it); the hash forces no commit of its own (see callInjected).
func (d *db) markSeen(env []byte, sent, now time.Time, done func(error)) {
	d.markSeenHash(sha256.Sum256(env), sent, now, done)
}

// markSeenHash is markSeen for the envelope whose sha256 is h.
func (d *db) markSeenHash(h [32]byte, sent, now time.Time, done func(error)) {
	key := seenKey(h, sent)
	d.later("seen", func(tx execer) error {
		return d.rows.add(tx, d.seenRows, key, now.UnixNano())
	}, done)
}

// seenKeySize is the length of a seen row's key (seenKey).
const seenKeySize = 8 + sha256.Size

// seenKey is the key of the seen row of the envelope whose sha256 is h,
// sent at sent: the sent time (unix ns, big-endian) before the hash, so
// that the hashes a commit records land on the table's last pages in
// the order the envelopes were sent, instead of one random page each (a
// 16 KiB WAL frame per hash once the table spans many pages). A copy of
// the envelope has the same bytes, so the same sent time and key. Rows
// of earlier versions are keyed by the hash alone (seenQ looks for both).
func seenKey(h [32]byte, sent time.Time) []byte {
	k := make([]byte, 0, seenKeySize)
	k = binary.BigEndian.AppendUint64(k, uint64(sent.UnixNano()))
	return append(k, h[:]...)
}

// sweepChunk bounds the rows one sweep transaction deletes: the store's
// writer, which the journal shares, is held only that long.
const sweepChunk = 5000

// sweep drops the hashes and received calls older than keep, and the call
// and served records older than records (calls whose message was never
// re-delivered, conversations that never completed), sweepChunk rows a
// transaction. A hash goes by the sent time its key begins with: a copy
// of an envelope sent longer than keep ago is refused as stale (keep is
// longer than stale) before its hash is looked up. One an earlier version
// keyed by the hash alone goes by the time it was recorded.
func (d *db) sweep(now time.Time, keep, records time.Duration) error {
	before := now.Add(-keep)
	chunk := ` LIMIT ` + fmt.Sprint(sweepChunk) + `)`
	for _, q := range []struct {
		stmt string
		arg  any
	}{
		{`DELETE FROM federation_seen WHERE hash IN (SELECT hash FROM federation_seen WHERE hash < ? AND length(hash) = ` +
			fmt.Sprint(seenKeySize) + chunk, sentPrefix(before)},
		{`DELETE FROM federation_received WHERE conv IN (SELECT conv FROM federation_received WHERE at < ?` + chunk,
			before.UnixNano()},
		{`DELETE FROM federation_calls WHERE link_thread IN (SELECT link_thread FROM federation_calls WHERE created < ?` +
			chunk, now.Add(-records).UnixNano()},
		{`DELETE FROM federation_served WHERE conv IN (SELECT conv FROM federation_served WHERE created < ?` + chunk,
			now.Add(-records).UnixNano()},
	} {
		if err := d.sweepChunks(q.stmt, q.arg); err != nil {
			return err
		}
	}
	if !d.legacySeen.Load() {
		return nil
	}
	if err := d.sweepChunks(`DELETE FROM federation_seen WHERE hash IN (SELECT hash FROM federation_seen
		WHERE length(hash) <> `+fmt.Sprint(seenKeySize)+` AND at < ?`+chunk, before.UnixNano()); err != nil {
		return err
	}
	var gone bool
	err := d.write("sweep", func(tx execer) error {
		gone = false
		var left int
		if err := tx.Query(`SELECT EXISTS (SELECT 1 FROM federation_seen WHERE length(hash) <> `+
			fmt.Sprint(seenKeySize)+`)`, nil, func(r *sql.Rows) error { return r.Scan(&left) }); err != nil {
			return err
		}
		if left == 1 {
			return nil
		}
		gone = true
		_, err := tx.Exec(`DELETE FROM federation_seen_legacy`)
		return err
	})
	if err == nil && gone {
		d.legacySeen.Store(false)
	}
	return err
}

// sweepChunks runs stmt, a deletion of at most sweepChunk rows, each in a
// transaction of its own, until it deletes fewer.
func (d *db) sweepChunks(stmt string, arg any) error {
	for {
		var n int64
		err := d.write("sweep", func(tx execer) error {
			var err error
			n, err = tx.Exec(stmt, arg)
			return err
		})
		if err != nil {
			return err
		}
		if n < sweepChunk {
			return nil
		}
	}
}

// sentPrefix is the start of the seen keys (seenKey) of the envelopes
// sent at t: every key of one sent before t is less.
func sentPrefix(t time.Time) []byte {
	ns := t.UnixNano()
	if ns < 0 { // before every key
		return []byte{}
	}
	return binary.BigEndian.AppendUint64(nil, uint64(ns))
}

// imported is a capability learnt from a peer.
type imported struct {
	Tag, Name, Description string
	XSD                    []byte
}

// saveImports replaces gw's remembered imports.
func (d *db) saveImports(ctx context.Context, gw string, list []imported) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.write("imports", func(tx execer) error {
		if _, err := tx.Exec(`DELETE FROM federation_imports WHERE gateway = ?`, gw); err != nil {
			return fmt.Errorf("federation: imports: %w", err)
		}
		for _, im := range list {
			if _, err := tx.Exec(`INSERT INTO federation_imports (gateway, tag, name, description, xsd) VALUES (?, ?, ?, ?, ?)`,
				gw, im.Tag, im.Name, im.Description, im.XSD); err != nil {
				return fmt.Errorf("federation: imports: %w", err)
			}
		}
		return nil
	})
}

// loadImports returns gw's remembered imports.
func (d *db) loadImports(gw string) ([]imported, error) {
	rows, err := d.b.reads().Query(`SELECT tag, name, description, xsd FROM federation_imports WHERE gateway = ? ORDER BY tag`, gw)
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
