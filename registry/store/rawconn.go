package store

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// rawConn is the writer's connection, driven through the SQLite C API that
// modernc.org/sqlite exports (modernc.org/sqlite/lib) rather than through
// database/sql. The journal writer binds ~13 values per row for hundreds of
// rows per transaction; database/sql converts every argument and the driver
// allocates, copies and frees C memory for each text and blob. rawConn copies
// all of one statement's text and blob arguments into a single reusable C
// buffer and binds them in place, which takes a third of the writer's CPU
// out of journaling (BenchmarkJournalFlow).
//
// A rawConn is used by one goroutine at a time (the writer's).
type rawConn struct {
	tls   *libc.TLS
	db    uintptr
	stmts map[string]uintptr
	// cell is 8 bytes of C memory for the out-parameters of open and
	// prepare.
	cell uintptr
	// arena holds the text and blob arguments of the statement being run;
	// it grows as needed and is reused.
	arena    uintptr
	arenaCap int
	// conv is run's reusable buffer of converted arguments.
	conv []sqlArg
}

// maxKeptArena is the largest argument buffer kept between statements; a
// larger one (a batch of near-maximal envelopes) is freed once its statement
// ran, so one burst does not pin its size for the store's lifetime.
const maxKeptArena = 1 << 20

// errRawClosed is returned by a rawConn used after close.
var errRawClosed = errors.New("store: writer connection closed")

// rawError is an error SQLite reported, with its extended result code.
type rawError struct {
	code int32
	msg  string
}

// Error renders the error like modernc.org/sqlite does: message and code.
func (e *rawError) Error() string { return fmt.Sprintf("%s (%d)", e.msg, e.code) }

// openRawConn opens the database at path for writing, with busy timeout
// busy and the per-connection settings every store connection has
// (synchronous NORMAL, foreign keys on). The database must already exist in
// WAL mode (Store.open migrates it first).
func openRawConn(path string, busy time.Duration) (*rawConn, error) {
	c := &rawConn{tls: libc.NewTLS(), stmts: map[string]uintptr{}}
	c.cell = libc.Xmalloc(c.tls, 8)
	if c.cell == 0 {
		c.tls.Close()
		return nil, errors.New("store: writer connection: out of memory")
	}
	name, err := libc.CString(path)
	if err != nil {
		c.free()
		return nil, err
	}
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, c.cell, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_NOMUTEX, 0)
	libc.Xfree(c.tls, name)
	c.db = c.readCell()
	if rc != sqlite3.SQLITE_OK {
		err := c.error(rc)
		c.close()
		return nil, fmt.Errorf("store: writer connection: %w", err)
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	sqlite3.Xsqlite3_busy_timeout(c.tls, c.db, int32(busy.Milliseconds()))
	for _, q := range []string{`PRAGMA synchronous = NORMAL`, `PRAGMA foreign_keys = ON`} {
		if _, err := c.exec(q); err != nil {
			c.close()
			return nil, fmt.Errorf("store: writer connection: %s: %w", q, err)
		}
	}
	return c, nil
}

// readCell returns the pointer an out-parameter call stored in c.cell.
func (c *rawConn) readCell() uintptr {
	return uintptr(binary.NativeEndian.Uint64(libc.GoBytes(c.cell, 8)))
}

// error returns the connection's last error for result code rc.
func (c *rawConn) error(rc int32) error {
	msg := "unknown error"
	if c.db != 0 {
		if p := sqlite3.Xsqlite3_errmsg(c.tls, c.db); p != 0 {
			msg = libc.GoString(p)
		}
		rc = sqlite3.Xsqlite3_extended_errcode(c.tls, c.db)
	}
	return &rawError{code: rc, msg: msg}
}

// prepare returns the cached statement of query, preparing it on first use.
func (c *rawConn) prepare(query string) (uintptr, error) {
	if c.db == 0 {
		return 0, errRawClosed
	}
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	q, err := libc.CString(query)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(c.tls, q)
	if rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, q, int32(len(query)), c.cell, 0); rc != sqlite3.SQLITE_OK {
		return 0, fmt.Errorf("store: prepare: %w", c.error(rc))
	}
	st := c.readCell()
	if st == 0 {
		return 0, fmt.Errorf("store: prepare: %q holds no statement", query)
	}
	c.stmts[query] = st
	return st, nil
}

// reserve makes the arena at least n bytes long.
func (c *rawConn) reserve(n int) error {
	if n <= c.arenaCap && c.arena != 0 {
		return nil
	}
	size := max(n, 2*c.arenaCap, 4096)
	p := libc.Xmalloc(c.tls, libc.Tsize_t(size))
	if p == 0 {
		return errors.New("store: writer connection: out of memory")
	}
	if c.arena != 0 {
		libc.Xfree(c.tls, c.arena)
	}
	c.arena, c.arenaCap = p, size
	return nil
}

// normalize converts an argument to one of the types bind handles, the way
// database/sql would.
func normalize(v any) (any, error) {
	switch v := v.(type) {
	case nil, int64, float64, bool, string, []byte:
		return v, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}

// bind binds args to st: text and blobs are copied into the arena and bound
// in place (SQLITE_STATIC: SQLite does not copy them), so they must stay
// untouched until the statement is reset.
func (c *rawConn) bind(st uintptr, args []sqlArg) error {
	if n := int(sqlite3.Xsqlite3_bind_parameter_count(c.tls, st)); n != len(args) {
		return fmt.Errorf("store: statement has %d parameters, got %d arguments", n, len(args))
	}
	size := 0
	for i := range args {
		size += len(args[i].s) + len(args[i].b)
	}
	if err := c.reserve(size + 1); err != nil {
		return err
	}
	off := 0
	for i := range args {
		a := &args[i]
		idx := int32(i + 1)
		var rc int32
		switch a.kind {
		case argNull:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, st, idx)
		case argInt:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, st, idx, a.i)
		case argFloat:
			rc = sqlite3.Xsqlite3_bind_double(c.tls, st, idx, math.Float64frombits(uint64(a.i)))
		case argText:
			p := c.arena + uintptr(off)
			copy(libc.GoBytes(p, len(a.s)), a.s)
			off += len(a.s)
			rc = sqlite3.Xsqlite3_bind_text(c.tls, st, idx, p, int32(len(a.s)), 0)
		case argBlob:
			p := c.arena + uintptr(off)
			copy(libc.GoBytes(p, len(a.b)), a.b)
			off += len(a.b)
			rc = sqlite3.Xsqlite3_bind_blob(c.tls, st, idx, p, int32(len(a.b)), 0)
		default:
			return fmt.Errorf("store: argument %d: unknown kind %d", idx, a.kind)
		}
		if rc != sqlite3.SQLITE_OK {
			return fmt.Errorf("store: bind argument %d: %w", idx, c.error(rc))
		}
	}
	return nil
}

// run binds args to query's statement and steps it to completion, calling
// row for each result row. It returns the number of rows the statement
// changed.
func (c *rawConn) run(query string, args []any, row func(st uintptr)) (int64, error) {
	conv := c.conv[:0]
	defer func() {
		clear(conv)
		c.conv = conv[:0]
	}()
	for i, a := range args {
		v, err := toArg(a)
		if err != nil {
			return 0, fmt.Errorf("store: argument %d: %w", i+1, err)
		}
		conv = append(conv, v)
	}
	return c.runArgs(query, conv, row)
}

// runArgs is run with arguments already in sqlArg form.
func (c *rawConn) runArgs(query string, args []sqlArg, row func(st uintptr)) (int64, error) {
	st, err := c.prepare(query)
	if err != nil {
		return 0, err
	}
	defer c.release(st)
	if err := c.bind(st, args); err != nil {
		sqlite3.Xsqlite3_reset(c.tls, st)
		return 0, err
	}
	for {
		rc := sqlite3.Xsqlite3_step(c.tls, st)
		switch rc {
		case sqlite3.SQLITE_ROW:
			if row != nil {
				row(st)
			}
			continue
		case sqlite3.SQLITE_DONE:
			changed := int64(sqlite3.Xsqlite3_changes64(c.tls, c.db))
			sqlite3.Xsqlite3_reset(c.tls, st)
			return changed, nil
		}
		err := c.error(rc)
		sqlite3.Xsqlite3_reset(c.tls, st)
		return 0, err
	}
}

// release frees an oversized arena after st ran, clearing st's bindings
// first so no parameter points into freed memory.
func (c *rawConn) release(st uintptr) {
	if c.arenaCap <= maxKeptArena {
		return
	}
	sqlite3.Xsqlite3_clear_bindings(c.tls, st)
	libc.Xfree(c.tls, c.arena)
	c.arena, c.arenaCap = 0, 0
}

// exec runs query with args and returns the number of rows it changed.
func (c *rawConn) exec(query string, args ...any) (int64, error) {
	return c.run(query, args, nil)
}

// queryInt64s runs query with args and returns the first column of every
// result row as an integer.
func (c *rawConn) queryInt64s(query string, args ...any) ([]int64, error) {
	var out []int64
	_, err := c.run(query, args, func(st uintptr) {
		out = append(out, c.columnInt64(st, 0))
	})
	return out, err
}

// columnInt64 returns column i of st's current row as an integer.
func (c *rawConn) columnInt64(st uintptr, i int) int64 {
	return int64(sqlite3.Xsqlite3_column_int64(c.tls, st, int32(i)))
}

// columnText returns a copy of column i of st's current row as text.
func (c *rawConn) columnText(st uintptr, i int) string {
	p := sqlite3.Xsqlite3_column_text(c.tls, st, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(c.tls, st, int32(i)))
	if p == 0 || n == 0 {
		return ""
	}
	return string(libc.GoBytes(p, n))
}

// columnBlob returns a copy of column i of st's current row as bytes.
func (c *rawConn) columnBlob(st uintptr, i int) []byte {
	p := sqlite3.Xsqlite3_column_blob(c.tls, st, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(c.tls, st, int32(i)))
	if p == 0 || n == 0 {
		return nil
	}
	return append([]byte(nil), libc.GoBytes(p, n)...)
}

// queryInt64 runs a query that returns exactly one integer.
func (c *rawConn) queryInt64(query string, args ...any) (int64, error) {
	vs, err := c.queryInt64s(query, args...)
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 {
		return 0, fmt.Errorf("store: %d rows, want 1", len(vs))
	}
	return vs[0], nil
}

// close finalizes the statements and closes the connection.
func (c *rawConn) close() error {
	if c.tls == nil {
		return nil
	}
	var err error
	for q, st := range c.stmts {
		sqlite3.Xsqlite3_finalize(c.tls, st)
		delete(c.stmts, q)
	}
	if c.db != 0 {
		if rc := sqlite3.Xsqlite3_close_v2(c.tls, c.db); rc != sqlite3.SQLITE_OK {
			err = fmt.Errorf("store: close writer connection: %w", c.error(rc))
		}
		c.db = 0
	}
	c.free()
	return err
}

// free releases the C memory and the TLS.
func (c *rawConn) free() {
	if c.arena != 0 {
		libc.Xfree(c.tls, c.arena)
		c.arena, c.arenaCap = 0, 0
	}
	if c.cell != 0 {
		libc.Xfree(c.tls, c.cell)
		c.cell = 0
	}
	c.tls.Close()
	c.tls = nil
}
