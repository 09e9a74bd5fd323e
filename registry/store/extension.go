package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Extension tables: another package's durable state kept in the store's
// database and written by the store's writer goroutine, so its writes share
// the journal's group commits (one database, one writer, one stream of WAL
// frames, fsyncs and checkpoints) instead of paying commits of their own.
//
// An extension declares its tables with AddSchema (CREATE … IF NOT EXISTS
// statements, named with a prefix of its own so they never meet the store's
// tables), writes with Write, WriteNow or WriteAsync, and reads through
// ReadDB. Its writes are applied in the order they were queued, relative to
// each other and to every other write of the store: a write is committed in
// the same transaction as, or a later one than, every write queued before it
// (a journal append included). So a row an extension queues before it
// journals an entry is durable once the entry is (WaitDurable), without a
// commit of its own.

// Tx is the writer's open transaction as an extension's write sees it. It is
// valid only during the write's function, on the writer goroutine: the
// function must not keep it, block, or call the Store's write methods (it
// would wait for itself).
type Tx struct {
	w *writer
	// atEnd are the functions AtEnd registered, run in order once the
	// run's extension writes are applied.
	atEnd []func(*Tx) error
}

// AtEnd registers fn to run inside the same transaction once every
// extension write of this run (those applied together with the one
// calling it) is applied: an extension gathers rows its writes make and
// writes them in one multi-row statement, rather than a statement each.
// fn runs on the writer goroutine, with this Tx; if it fails the run
// fails as if the write that registered it had (the batch is retried op
// by op, each in a transaction — and a Tx — of its own). Rows so deferred
// are written after the run's later writes: an extension defers only
// writes that none of its later writes of the transaction reads or
// changes.
func (t *Tx) AtEnd(fn func(*Tx) error) { t.atEnd = append(t.atEnd, fn) }

// Exec runs one statement inside the transaction and returns the number of
// rows it changed. Each query text is prepared once and kept until Close, so
// texts should be constants (values go in args).
func (t *Tx) Exec(query string, args ...any) (int64, error) {
	return t.w.exec(query, args...)
}

// Query runs a query inside the transaction and calls row for each result
// row, which it scans; it sees the transaction's own changes.
func (t *Tx) Query(query string, args []any, row func(*sql.Rows) error) error {
	t.w.counters.statements.Add(1)
	return t.w.conn.query(query, args, row)
}

// AddSchema applies an extension's schema, ddl — idempotent statements:
// CREATE TABLE/INDEX IF NOT EXISTS, an INSERT of a first row WHERE NOT
// EXISTS — in a transaction of the writer and returns once it is
// committed. An extension calls it once after Open,
// before its first write; name names it in errors.
func (s *Store) AddSchema(ctx context.Context, name, ddl string) error {
	_, err := s.do(ctx, "schema of "+name, func(w *writer) (int64, error) {
		if w.conn.conn == nil {
			return 0, errWriteConnClosed
		}
		w.counters.statements.Add(1)
		// Not through the statement cache: ddl is several statements, run
		// once.
		if _, err := w.conn.conn.ExecContext(context.Background(), ddl); err != nil {
			return 0, fmt.Errorf("store: schema of %s: %w", name, err)
		}
		return 0, nil
	})
	return err
}

// Write runs fn inside the writer's next group commit and returns once that
// commit is durable (or fn or the commit failed). The writer commits as soon
// as it has taken what is queued, as for any synchronous write. If fn fails,
// its changes are rolled back and the other writes of the batch commit
// without it. name names the write in errors and logs. If ctx ends first,
// the write may still be committed later.
func (s *Store) Write(ctx context.Context, name string, fn func(*Tx) error) error {
	_, err := s.call(ctx, op{kind: opExt, name: name, ext: fn})
	return err
}

// WriteNow queues fn like Write but returns once it is queued: done (when
// not nil) is told its outcome once its commit is durable (nil) or it
// failed. The writer commits as soon as it has taken what is queued. done
// runs on the writer goroutine, so it must not block nor call the Store's
// write methods; the writes queued after fn wait for it.
func (s *Store) WriteNow(name string, fn func(*Tx) error, done func(error)) error {
	return s.enqueueAsync(&op{kind: opExt, name: name, ext: fn, done: done,
		reply: make(chan opResult, 1)}) // a reply makes it urgent; nobody reads it
}

// WriteAsync queues fn for a coming group commit without forcing one: it
// rides with the next commit somebody waits for, or commits after the
// batch delay (Options.BatchDelay; without done, a batch nobody waits for
// may linger: Options.BatchLinger). done (when not nil) is told its outcome
// once its commit is durable (nil) or it failed, on the writer goroutine
// (see WriteNow); without done a failure is logged and returned by the next
// Flush, as for any asynchronous write.
func (s *Store) WriteAsync(name string, fn func(*Tx) error, done func(error)) error {
	return s.enqueueAsync(&op{kind: opExt, name: name, ext: fn, done: done})
}

// ReadDB is the store's read-only connection pool (query_only), for an
// extension's reads: each read sees what was committed when it began and
// never waits for the writer. Statements may be prepared on it; it is
// closed by Close.
func (s *Store) ReadDB() *sql.DB { return s.Reader.db }

// applyExtensions runs the extension writes p gathered, in queue order,
// inside the open transaction.
func (w *writer) applyExtensions(p *pending) error {
	if len(p.ext) == 0 {
		return nil
	}
	tx := &Tx{w: w}
	for _, o := range p.ext {
		if err := o.ext(tx); err != nil {
			return fmt.Errorf("store: %s: %w", o.name, err)
		}
	}
	for _, fn := range tx.atEnd {
		if err := fn(tx); err != nil {
			return fmt.Errorf("store: extension writes (%d): %w", len(p.ext), err)
		}
	}
	return nil
}
