package federation

import (
	"database/sql"
	"fmt"
	"strings"
)

// A link writes rows one or two per envelope — its outbox entry and the
// entry's deletion once acknowledged, the hash of each answer received,
// the received and served rows of each call received, its done mark and
// the served row's deletion, the record of each call made and its
// deletion — and a group commit carries those of many envelopes. Each
// such write still goes to the store's writer on its own (its place in
// the queue, and its done told once its commit is durable), but only
// gathers its row in a rowBatch; the state's rowSet writes the rows the
// writes of one run gathered in multi-row statements once they are all
// applied (execer.atEnd), in the same transaction. A statement costs the
// writer far more than a row of it.
//
// What a later write of the state sees is unchanged: any statement a write
// runs itself (stateTx) first writes the rows gathered before it. Among
// the gathered rows, the batches are written in the order of the rowSet
// (inserts before the deletions and the done marks), which is the order
// they were gathered in for every key: a gathered deletion of an outbox
// entry follows its insert (an acknowledgement cancels an insert that has
// not run: rowClaim), and a row inserted again after its deletion in the
// same run (a conversation or call key, which only a copy's refusal and
// resend could bring) has what was gathered before written first. Only the
// writes of other parts of the store in the same run (the journal's) come
// before the gathered rows, in the same transaction.

// maxBatchRows is the most rows one statement of a rowBatch carries; more
// are written in chunks of power-of-two sizes, so at most
// log2(maxBatchRows)+1 texts of a statement are ever prepared.
const maxBatchRows = 64

// stateTx is the transaction as the state's writes see it: a statement
// they run comes after the rows gathered before it.
type stateTx struct {
	execer
	rows *rowSet
}

func (t stateTx) Exec(query string, args ...any) (int64, error) {
	if err := t.rows.flushNow(t.execer); err != nil {
		return 0, err
	}
	return t.execer.Exec(query, args...)
}

func (t stateTx) Query(query string, args []any, row func(*sql.Rows) error) error {
	if err := t.rows.flushNow(t.execer); err != nil {
		return err
	}
	return t.execer.Query(query, args, row)
}

// rowSet is the rowBatches of the state, written in the order they are
// declared. It is used only on the goroutine that applies the state's
// writes (the store's writer; the memory backend's writes, one at a
// time).
type rowSet struct {
	// owner is the transaction whose end writes what the batches hold
	// (nil: none); gathered says whether they hold any.
	owner    execer
	gathered bool
	batches  []*rowBatch
	// deleted are the keys (table and key) a batch of deletions holds:
	// a row inserted again under one has what was gathered written first.
	deleted map[[2]string]bool
}

// add gathers row in b (one of s's batches) for the end of tx's run.
func (s *rowSet) add(tx execer, b *rowBatch, row ...any) error {
	if st, ok := tx.(stateTx); ok {
		tx = st.execer
	}
	if s.owner != tx {
		// The first row of this run: what an earlier run gathered was
		// written by its end, or its transaction failed first (its writes
		// are then applied again, each in a transaction of its own).
		s.drop()
		s.owner = tx
		tx.atEnd(s.flush)
	}
	if b.table != "" {
		k := [2]string{b.table, row[0].(string)}
		if b.deletes {
			if s.deleted == nil {
				s.deleted = map[[2]string]bool{}
			}
			s.deleted[k] = true
		} else if s.deleted[k] {
			if err := s.flushNow(tx); err != nil {
				return err
			}
		}
	}
	b.args = append(b.args, row...)
	b.rows++
	s.gathered = true
	return nil
}

// drop forgets what the batches hold, and the run.
func (s *rowSet) drop() {
	s.owner = nil
	s.empty()
}

// empty drops what the batches hold.
func (s *rowSet) empty() {
	s.gathered = false
	clear(s.deleted)
	for _, b := range s.batches {
		clear(b.args)
		b.args, b.rows = b.args[:0], 0
	}
}

// flushNow writes what the batches gathered in tx's run so far, if any:
// a statement of tx comes next.
func (s *rowSet) flushNow(tx execer) error {
	if s.owner != tx || !s.gathered {
		return nil
	}
	defer s.empty()
	return s.write(tx)
}

// flush writes what the batches gathered for tx at the end of its run.
func (s *rowSet) flush(tx execer) error {
	defer s.drop()
	return s.write(tx)
}

func (s *rowSet) write(tx execer) error {
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
	// table, when set, names the table whose key (a string, the row's
	// first value) the rows insert, or with deletes delete.
	table   string
	deletes bool
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

// keyed marks b's rows as inserting (deletes false) or deleting rows of
// table by their key, the row's first value.
func (b *rowBatch) keyed(table string, deletes bool) *rowBatch {
	b.table, b.deletes = table, deletes
	return b
}

// flush writes the rows gathered (the rowSet drops them after).
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
