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
// only through the read pool, after the commit), the insert of an outbox
// entry and its deletion by its seq (the outbox is read only through the
// read pool; the insert is written before the deletion: rowSet), the done mark of a received call (its row inserted before
// it, deleted only for a call refused before it was injected, which is
// never marked done).

// maxBatchRows is the most rows one statement of a rowBatch carries; more
// are written in chunks of power-of-two sizes, so at most
// log2(maxBatchRows)+1 texts of a statement are ever prepared.
const maxBatchRows = 64

// rowSet is the rowBatches of the state, written in the order they are
// declared at the end of each run that gathered rows in any of them: an
// outbox entry's insert before its deletion (an acknowledgement cancels an
// insert that has not run, rowClaim, so a deletion that is gathered
// follows its insert, in its run or a later one). It is used only on the
// goroutine that applies the state's writes (the store's writer; the
// memory backend's writes, one at a time).
type rowSet struct {
	// owner is the transaction whose end writes what the batches hold
	// (nil: none).
	owner   execer
	batches []*rowBatch
}

// add gathers row in b (one of s's batches) for tx's end.
func (s *rowSet) add(tx execer, b *rowBatch, row ...any) {
	if s.owner != tx {
		// The first row of this run: what an earlier run gathered was
		// written by its end, or its transaction failed first (its writes
		// are then applied again, each in a transaction of its own).
		s.reset()
		s.owner = tx
		tx.atEnd(s.flush)
	}
	b.args = append(b.args, row...)
	b.rows++
}

// reset drops what the batches hold.
func (s *rowSet) reset() {
	s.owner = nil
	for _, b := range s.batches {
		clear(b.args)
		b.args, b.rows = b.args[:0], 0
	}
}

// flush writes what the batches gathered for tx, in their order.
func (s *rowSet) flush(tx execer) error {
	defer s.reset()
	for _, b := range s.batches {
		if err := b.flush(tx); err != nil {
			return err
		}
	}
	return nil
}

// rowBatch gathers the rows of one statement (rowSet.add).
type rowBatch struct {
	// what names the rows in errors.
	what    string
	cols    int
	queries map[int]string // rows → query text
	args    []any
	rows    int
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

// flush writes the rows gathered (rowSet.flush drops them after).
func (b *rowBatch) flush(tx execer) error {
	rows, off := b.rows, 0
	for k := maxBatchRows; k >= 1; k /= 2 {
		for ; rows >= k; rows -= k {
			if _, err := tx.Exec(b.queries[k], b.args[off*b.cols:(off+k)*b.cols]...); err != nil {
				return fmt.Errorf("federation: %s: %w", b.what, err)
			}
			off += k
		}
	}
	return nil
}
