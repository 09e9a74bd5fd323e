package federation

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// errStateClosed: a write submitted after the federation state closed.
var errStateClosed = errors.New("federation: state closed")

// execer runs statements inside a transaction of the federation state: a
// *store.Tx (the store's writer) or a memTx (the state in memory).
type execer interface {
	// Exec runs one statement and returns the number of rows it changed.
	Exec(query string, args ...any) (int64, error)
	// Query runs a query and calls row for each result row.
	Query(query string, args []any, row func(*sql.Rows) error) error
	// atEnd runs fn inside the same transaction once the writes applied
	// with this one are (store.Tx.AtEnd): rowBatch writes the rows its
	// writes gathered then.
	atEnd(fn func(execer) error)
}

// storeTx is a *store.Tx as the federation's writes see it.
type storeTx struct{ *store.Tx }

func (t storeTx) atEnd(fn func(execer) error) {
	t.AtEnd(func(tx *store.Tx) error { return fn(storeTx{tx}) })
}

// backend is where the federation state lives and how it is written:
// the organism's store (storeBackend), whose writer commits the
// federation's writes in the journal's group commits, or a database in
// memory for an organism without a data directory (memBackend). Writes are
// applied in the order they are submitted.
type backend interface {
	// write runs fn in a transaction and returns once it is durable.
	write(name string, fn func(execer) error) error
	// now runs fn in the next transaction, which commits as soon as what
	// is queued is taken, without waiting; done is told the outcome once
	// it is durable (or failed) and must not block.
	now(name string, fn func(execer) error, done func(error))
	// later is now without forcing a commit: fn rides with the next one
	// somebody waits for (a journal append an organism waits for, a
	// call's record), or commits after the store's batch delay.
	later(name string, fn func(execer) error, done func(error))
	// reads is the pool lookups read through: for the store its read-only
	// pool, which sees the last committed state and never waits for the
	// writer.
	reads() *sql.DB
	// commits counts the transactions that carried federation writes.
	commits() int64
	// close releases what the backend owns (not the organism's store).
	close() error
}

// storeBackend keeps the federation state in the organism's store, in
// tables of its own (schema.go), written through the store's writer.
type storeBackend struct {
	st *store.Store
	// last is the store's commit count when the writer last applied a
	// federation write (writer goroutine only); carried counts the
	// distinct ones: the commits that carried federation writes.
	last    int64
	carried atomic.Int64
}

// wrap adapts fn to the store and counts the commits it rides in.
func (b *storeBackend) wrap(fn func(execer) error) func(*store.Tx) error {
	return func(tx *store.Tx) error {
		if c := b.st.Stats().Commits; c+1 != b.last {
			b.last = c + 1
			b.carried.Add(1)
		}
		return fn(storeTx{tx})
	}
}

func (b *storeBackend) write(name string, fn func(execer) error) error {
	return b.st.Write(context.Background(), "federation: "+name, b.wrap(fn))
}

func (b *storeBackend) now(name string, fn func(execer) error, done func(error)) {
	if err := b.st.WriteNow("federation: "+name, b.wrap(fn), done); err != nil && done != nil {
		done(err)
	}
}

func (b *storeBackend) later(name string, fn func(execer) error, done func(error)) {
	if err := b.st.WriteAsync("federation: "+name, b.wrap(fn), done); err != nil && done != nil {
		done(err)
	}
}

func (b *storeBackend) reads() *sql.DB { return b.st.ReadDB() }
func (b *storeBackend) commits() int64 { return b.carried.Load() }
func (b *storeBackend) close() error   { return nil }

// memBackend keeps the federation state in an SQLite database in memory
// (an organism without a data directory: nothing survives it anyway). Each
// write is a transaction of its own, run on the submitting goroutine; done
// is told the outcome before the submit returns.
type memBackend struct {
	db *sql.DB
	mu sync.Mutex
	n  atomic.Int64
}

// memTx is a transaction of a memBackend; end holds what atEnd
// registered, run before it commits.
type memTx struct {
	tx  *sql.Tx
	end *[]func(execer) error
}

func (t memTx) atEnd(fn func(execer) error) { *t.end = append(*t.end, fn) }

func (t memTx) Exec(query string, args ...any) (int64, error) {
	r, err := t.tx.Exec(query, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func (t memTx) Query(query string, args []any, row func(*sql.Rows) error) error {
	rows, err := t.tx.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (b *memBackend) write(name string, fn func(execer) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	tx, err := b.db.Begin()
	if err != nil {
		return fmt.Errorf("federation: %s: %w", name, err)
	}
	var end []func(execer) error
	mt := memTx{tx: tx, end: &end}
	err = fn(mt)
	for i := 0; err == nil && i < len(end); i++ {
		err = end[i](mt)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("federation: %s: %w", name, err), tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("federation: %s: commit: %w", name, err)
	}
	b.n.Add(1)
	return nil
}

func (b *memBackend) now(name string, fn func(execer) error, done func(error)) {
	err := b.write(name, fn)
	if done != nil {
		done(err)
	}
}

func (b *memBackend) later(name string, fn func(execer) error, done func(error)) {
	b.now(name, fn, done)
}
func (b *memBackend) reads() *sql.DB { return b.db }
func (b *memBackend) commits() int64 { return b.n.Load() }
func (b *memBackend) close() error   { return b.db.Close() }
