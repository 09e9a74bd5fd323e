package federation

import (
	"fmt"
	"strings"
)

// A link writes some rows one per envelope — the hash of each answer
// received, the deletion of each envelope the peer acknowledged, the done
// mark of each call received — and a group commit carries those of many
// envelopes. Each such write still goes to the store's writer on its own
// (its place in the queue, and its done told once its commit is durable),
// but only gathers its row in a rowBatch; the batch writes the rows the
// writes of one run gathered in multi-row statements once they are all
// applied (execer.atEnd), in the same transaction. A statement costs the
// writer far more than a row of it.
//
// A row so written is written after the writes that followed its own in
// the run: only writes that no later write of the federation reads or
// changes in the same transaction are gathered — an insert of a hash (read
// only through the read pool, after the commit), the deletion of an
// outbox entry by its seq (whose insert always comes before it, or never:
// rowClaim), the done mark of a received call (its row inserted before
// it, deleted only for a call refused before it was injected, which is
// never marked done).

// maxBatchRows is the most rows one statement of a rowBatch carries; more
// are written in chunks of power-of-two sizes, so at most
// log2(maxBatchRows)+1 texts of a statement are ever prepared.
const maxBatchRows = 64

// rowBatch gathers the rows of one statement whose writes run in one
// transaction, and writes them when the transaction's run ends. It is used
// only on the goroutine that applies the state's writes (the store's
// writer; the memory backend's writes, one at a time).
type rowBatch struct {
	// what names the rows in errors.
	what    string
	cols    int
	queries map[int]string // rows → query text
	// owner is the transaction whose end writes args (nil: none).
	owner execer
	args  []any
	rows  int
}

// newRowBatch is the batch of the statement head + tuple × rows + tail,
// whose tuple has cols placeholders.
func newRowBatch(what, head, tuple, tail string, cols int) *rowBatch {
	b := &rowBatch{what: what, cols: cols, queries: map[int]string{}}
	for k := maxBatchRows; k >= 1; k /= 2 {
		b.queries[k] = head + strings.TrimSuffix(strings.Repeat(tuple+", ", k), ", ") + tail
	}
	return b
}

// add gathers one row (cols values) for tx's end.
func (b *rowBatch) add(tx execer, row ...any) {
	if b.owner != tx {
		// The first row of this run: what an earlier run gathered was
		// written by its end, or its transaction failed first (its writes
		// are then applied again, each in a transaction of its own).
		clear(b.args)
		b.owner, b.args, b.rows = tx, b.args[:0], 0
		tx.atEnd(b.flush)
	}
	b.args = append(b.args, row...)
	b.rows++
}

// flush writes the rows gathered for tx.
func (b *rowBatch) flush(tx execer) error {
	args, rows := b.args, b.rows
	defer func() {
		clear(args)
		b.owner, b.args, b.rows = nil, args[:0], 0
	}()
	off := 0
	for k := maxBatchRows; k >= 1; k /= 2 {
		for ; rows >= k; rows -= k {
			if _, err := tx.Exec(b.queries[k], args[off*b.cols:(off+k)*b.cols]...); err != nil {
				return fmt.Errorf("federation: %s: %w", b.what, err)
			}
			off += k
		}
	}
	return nil
}
