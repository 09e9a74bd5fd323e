package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// writeConn is the writer's connection: the write pool's only connection,
// held by the writer goroutine for the store's lifetime, so that its
// transactions (BEGIN IMMEDIATE … COMMIT, run as statements) and its
// prepared statements stay on one SQLite connection. Every statement is
// prepared once, on first use, and kept until close. The journal's
// multi-row INSERT runs through execValues instead (doc.go says why).
//
// A writeConn is used by one goroutine at a time (the writer's; Close's
// checkpoint runs after the writer exited).
type writeConn struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// driverStmts are the statements execValues prepared on the driver
	// connection, used only inside Conn.Raw.
	driverStmts map[string]driver.Stmt
	// counts counts each statement's runs and the rows they changed.
	counts *statementCounts
}

// errWriteConnClosed is returned by a writeConn used after close.
var errWriteConnClosed = errors.New("store: writer connection closed")

// newWriteConn takes the connection of db, the write pool (one connection),
// counting its statements in counts.
func newWriteConn(ctx context.Context, db *sql.DB, counts *statementCounts) (*writeConn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: writer connection: %w", err)
	}
	return &writeConn{conn: conn, stmts: map[string]*sql.Stmt{}, driverStmts: map[string]driver.Stmt{},
		counts: counts}, nil
}

// stmt returns the prepared statement of query, preparing it on first use.
func (c *writeConn) stmt(query string) (*sql.Stmt, error) {
	if c.conn == nil {
		return nil, errWriteConnClosed
	}
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// exec runs a statement and returns the number of rows it changed.
func (c *writeConn) exec(query string, args ...any) (int64, error) {
	st, err := c.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.Exec(args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	c.counts.add(query, n)
	return n, err
}

// errDriverUnsupported reports a database driver without the context
// variants of Prepare and Exec that execValues calls.
var errDriverUnsupported = errors.New("store: the SQLite driver cannot prepare or execute with a context")

// execValues runs a statement whose arguments are already driver values
// (int64, float64, bool, []byte, string, time.Time or nil; the driver
// rejects any other) and returns the number of rows it changed. It sets
// the ordinals of args and does not keep args.
func (c *writeConn) execValues(query string, args []driver.NamedValue) (int64, error) {
	if c.conn == nil {
		return 0, errWriteConnClosed
	}
	for i := range args {
		args[i].Ordinal = i + 1
	}
	var n int64
	err := c.conn.Raw(func(dc any) error {
		st, ok := c.driverStmts[query]
		if !ok {
			prep, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errDriverUnsupported
			}
			var err error
			if st, err = prep.PrepareContext(context.Background(), query); err != nil {
				return err
			}
			c.driverStmts[query] = st
		}
		ex, ok := st.(driver.StmtExecContext)
		if !ok {
			return errDriverUnsupported
		}
		res, err := ex.ExecContext(context.Background(), args)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		c.counts.add(query, n)
		return err
	})
	return n, err
}

// query runs a query and calls row for each result row, which it scans.
func (c *writeConn) query(query string, args []any, row func(rows *sql.Rows) error) error {
	st, err := c.stmt(query)
	if err != nil {
		return err
	}
	rows, err := st.Query(args...)
	if err != nil {
		return err
	}
	c.counts.add(query, 0)
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryInt64s runs a query returning one integer column.
func (c *writeConn) queryInt64s(query string, args ...any) ([]int64, error) {
	var out []int64
	err := c.query(query, args, func(rows *sql.Rows) error {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// queryInt64 runs a query returning exactly one integer.
func (c *writeConn) queryInt64(query string, args ...any) (int64, error) {
	vs, err := c.queryInt64s(query, args...)
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 {
		return 0, fmt.Errorf("store: %d rows, want 1", len(vs))
	}
	return vs[0], nil
}

// close closes the statements and hands the connection back to the write
// pool (which Store.closeDBs closes).
func (c *writeConn) close() error {
	if c.conn == nil {
		return nil
	}
	var errs []error
	if len(c.driverStmts) > 0 {
		errs = append(errs, c.conn.Raw(func(any) error {
			var errs []error
			for q, st := range c.driverStmts {
				errs = append(errs, st.Close())
				delete(c.driverStmts, q)
			}
			return errors.Join(errs...)
		}))
	}
	for q, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, q)
	}
	errs = append(errs, c.conn.Close())
	c.conn = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close writer connection: %w", err)
	}
	return nil
}
