package store

import (
	"database/sql/driver"
	"strings"
)

// maxChunkRows is the most rows one statement of newRowStatement carries.
// Larger runs are split into chunks of power-of-two sizes, so at most
// log2(maxChunkRows)+1 statements per shape are ever prepared.
const maxChunkRows = 64

// kernelExactRows is the most rows one statement of newKernelStatement
// carries: a run of up to that many rows is written by one statement of
// exactly its rows (a bus batch's 11 thread rows took 3 statements in
// power-of-two chunks), a longer one in statements of kernelExactRows and
// one of the rest.
const kernelExactRows = 32

// rowStatement is a statement that repeats one tuple of placeholders per
// row: head + tuple + ", " + tuple … + tail. Its query texts are built once,
// for every chunk size, when it is declared; a query is prepared the first
// time a chunk of its size comes.
type rowStatement struct {
	cols    int            // placeholders per tuple
	sizes   []int          // the chunk sizes, largest first
	queries map[int]string // rows → query text
}

// newRowStatement is a rowStatement for chunks of power-of-two sizes up to
// maxChunkRows; cols is the number of placeholders in tuple.
func newRowStatement(head, tuple, tail string, cols int) *rowStatement {
	var sizes []int
	for k := maxChunkRows; k >= 1; k /= 2 {
		sizes = append(sizes, k)
	}
	return buildRowStatement(head, tuple, tail, cols, sizes)
}

// newKernelStatement is a rowStatement for chunks of every size up to
// kernelExactRows.
func newKernelStatement(head, tuple, tail string, cols int) *rowStatement {
	var sizes []int
	for k := kernelExactRows; k >= 1; k-- {
		sizes = append(sizes, k)
	}
	return buildRowStatement(head, tuple, tail, cols, sizes)
}

// buildRowStatement builds the queries of head, tuple × k, tail for every
// k of sizes.
func buildRowStatement(head, tuple, tail string, cols int, sizes []int) *rowStatement {
	rs := &rowStatement{cols: cols, sizes: sizes, queries: make(map[int]string, len(sizes))}
	for _, k := range sizes {
		rs.queries[k] = repeatTuples(head, tuple, tail, k)
	}
	return rs
}

// repeatTuples is the query head, k comma-separated copies of tuple, tail.
func repeatTuples(head, tuple, tail string, k int) string {
	var b strings.Builder
	b.Grow(len(head) + k*(len(tuple)+2) + len(tail))
	b.WriteString(head)
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	b.WriteString(tail)
	return b.String()
}

// chunkRows calls run for each chunk of rows rows whose arguments are args
// (rs.cols per row, in row order): the largest chunks first, each with its
// query text and arguments.
func chunkRows[T any](rs *rowStatement, rows int, args []T, run func(query string, args []T) error) error {
	off := 0
	for _, k := range rs.sizes {
		for rows >= k {
			if err := run(rs.queries[k], args[off*rs.cols:(off+k)*rs.cols]); err != nil {
				return err
			}
			off += k
			rows -= k
		}
	}
	return nil
}

// execRows runs rs over rows rows whose arguments are args and returns the
// total number of affected rows.
func (w *writer) execRows(rs *rowStatement, rows int, args []any) (int64, error) {
	var total int64
	err := chunkRows(rs, rows, args, func(query string, args []any) error {
		n, err := w.exec(query, args...)
		total += n
		return err
	})
	return total, err
}

// execRowValues is execRows for arguments that are already driver values
// (writeConn.execValues).
func (w *writer) execRowValues(rs *rowStatement, rows int, args []driver.NamedValue) (int64, error) {
	var total int64
	err := chunkRows(rs, rows, args, func(query string, args []driver.NamedValue) error {
		w.counters.statements.Add(1)
		n, err := w.conn.execValues(query, args)
		total += n
		return err
	})
	return total, err
}
