package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
)

// Delivery marks are kept as a watermark plus exceptions rather than one row
// per message. A message that reached a listener (kind message, listener
// set: a "markable" entry, what Undelivered reports) is delivered once
// MarkDelivered recorded it:
//
//   - journal_state.delivered_seq, the watermark: every markable entry at or
//     below it is delivered;
//   - journal_delivered: the markable entries above the watermark that were
//     delivered out of order, as one row per journal partition (1024
//     consecutive seqs, schema.go) holding a '0'/'1' character per
//     seq.
//
// The writer knows the undelivered markable entries above the watermark
// (loaded at Open, then kept up to date from its own appends and marks) and
// at each commit moves the watermark to just below the oldest of them,
// dropping the partition rows it passes. Messages are handled in about the
// order they are journaled, so most marks cost no write at all.
//
// Not all of them: in a busy organism a commit finds hundreds of messages
// in flight, scattered between the delivered ones (a handler's reply is
// journaled while the messages queued ahead of its recipient are not yet
// handled), so about half of all marks land above the watermark. A row per
// such mark cost the writer ~2 µs per journaled message; rewriting the one
// or two partition rows a commit touches costs next to nothing.

// watermarkExpr is the delivery watermark in a query.
const watermarkExpr = `(SELECT delivered_seq FROM journal_state WHERE id = 1)`

// markedExpr, in a query over journal rows, is whether seq has a delivery
// mark above the watermark.
var markedExpr = `EXISTS (SELECT 1 FROM journal_delivered WHERE part = seq >> ` + strconv.Itoa(journalPartitionBits) +
	` AND substr(marks, (seq & ` + strconv.Itoa(partitionSize-1) + `) + 1, 1) = '1')`

// deliveredUpsert writes one partition's marks.
const deliveredUpsert = `INSERT INTO journal_delivered (part, marks) VALUES (?, ?)
	ON CONFLICT (part) DO UPDATE SET marks = excluded.marks`

// partMarks is one partition's marks: byte k is '1' when the seq at offset
// k is marked delivered, else '0' (the text of its journal_delivered row).
type partMarks [partitionSize]byte

// newPartMarks returns a partition without marks.
func newPartMarks() *partMarks {
	p := new(partMarks)
	for i := range p {
		p[i] = '0'
	}
	return p
}

// deliveryTracker is the writer's view of deliveries. Only the writer
// goroutine uses it. Changes made inside a transaction are undone when it
// rolls back.
type deliveryTracker struct {
	// mark is the watermark: every markable entry at or below it is
	// delivered.
	mark int64
	// high is the highest journal seq committed (or in the open
	// transaction), rows and tombstones alike.
	high int64
	// order holds, from head on and in increasing order, the markable seqs
	// above mark that were undelivered when appended (or loaded); open is
	// the subset still undelivered.
	order []int64
	head  int
	open  map[int64]struct{}
	// parts mirrors journal_delivered: the marks of the partitions not yet
	// wholly at or below the watermark (and, until the commit that deletes
	// their rows, of those the open transaction's watermark passed).
	parts map[int64]*partMarks

	tx deliveryTx
}

// deliveryTx is what a transaction changed, to persist or to undo.
type deliveryTx struct {
	mark, high int64
	head, n    int
	delivered  []int64 // closed by a mark
	dropped    []int64 // closed by a deletion (retention)
	// set and cleared are the marks the transaction wrote into parts and
	// took out of them; dirty lists the partitions they are in.
	set, cleared []int64
	dirty        []int64
}

// loadDeliveries reads the watermark, the undelivered markable entries and
// the marks of journal_delivered; high is the journal's highest seq.
func loadDeliveries(ctx context.Context, conn *sql.Conn, high int64) (deliveryTracker, error) {
	t := deliveryTracker{high: high, open: make(map[int64]struct{}), parts: make(map[int64]*partMarks)}
	if err := conn.QueryRowContext(ctx, `SELECT `+watermarkExpr).Scan(&t.mark); err != nil {
		return t, fmt.Errorf("store: read the delivery watermark: %w", err)
	}
	t.mark = min(t.mark, high) // only a tampered database has it higher
	if err := t.loadParts(ctx, conn); err != nil {
		return t, err
	}
	err := eachRow(ctx, conn, `SELECT seq `+undelivered, []any{0}, func(rows *sql.Rows) error {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return err
		}
		if seq > t.mark {
			t.order = append(t.order, seq)
			t.open[seq] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("store: read undelivered entries: %w", err)
	}
	return t, nil
}

// loadParts reads journal_delivered into t.parts. A character other than
// '1' reads as no mark, as it does in the undelivered query (journal_read.go).
func (t *deliveryTracker) loadParts(ctx context.Context, conn queryer) error {
	err := eachRow(ctx, conn, `SELECT part, marks FROM journal_delivered`, nil, func(rows *sql.Rows) error {
		var (
			part  int64
			marks string
		)
		if err := rows.Scan(&part, &marks); err != nil {
			return err
		}
		p := newPartMarks()
		for i := range min(len(marks), partitionSize) {
			if marks[i] == '1' {
				p[i] = '1'
			}
		}
		t.parts[part] = p
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: read delivery marks: %w", err)
	}
	return nil
}

// begin starts tracking a transaction.
func (t *deliveryTracker) begin() {
	t.tx.mark, t.tx.high = t.mark, t.high
	t.tx.head, t.tx.n = t.head, len(t.order)
	t.tx.reset()
}

// reset empties the transaction's change lists, keeping their memory.
func (tx *deliveryTx) reset() {
	tx.delivered, tx.dropped = tx.delivered[:0], tx.dropped[:0]
	tx.set, tx.cleared, tx.dirty = tx.set[:0], tx.cleared[:0], tx.dirty[:0]
}

// appended records a journal append of the open transaction.
func (t *deliveryTracker) appended(e *Entry) {
	t.high = max(t.high, e.Seq)
	if e.Kind == Message && e.Listener != "" {
		t.order = append(t.order, e.Seq)
		t.open[e.Seq] = struct{}{}
	}
}

// deliver records the mark of seq. Marks of entries that are
// delivered already, are not markable or were deleted are no-ops; a seq
// above every journaled one was never journaled (ErrNotFound).
func (t *deliveryTracker) deliver(seq int64) error {
	switch _, undelivered := t.open[seq]; {
	case undelivered:
		delete(t.open, seq)
		t.tx.delivered = append(t.tx.delivered, seq)
	case seq > t.high:
		return fmt.Errorf("%w: journal seq %d", ErrNotFound, seq)
	}
	return nil
}

// drop forgets seq, deleted by retention: it is no longer waited for, and
// its mark above the watermark, if any, is taken out.
func (t *deliveryTracker) drop(seq int64) {
	if _, undelivered := t.open[seq]; undelivered {
		delete(t.open, seq)
		t.tx.dropped = append(t.tx.dropped, seq)
		return
	}
	if p := t.parts[partitionOf(seq)]; p != nil && p[seq&(partitionSize-1)] == '1' {
		t.flip(seq, '0')
		t.tx.cleared = append(t.tx.cleared, seq)
	}
}

// flip sets seq's character in parts to c and notes its partition as
// changed by the open transaction.
func (t *deliveryTracker) flip(seq int64, c byte) {
	part := partitionOf(seq)
	p := t.parts[part]
	if p == nil {
		p = newPartMarks()
		t.parts[part] = p
	}
	p[seq&(partitionSize-1)] = c
	if !slices.Contains(t.tx.dirty, part) {
		t.tx.dirty = append(t.tx.dirty, part)
	}
}

// hasPartsBelow reports whether parts holds a partition below floor.
func (t *deliveryTracker) hasPartsBelow(floor int64) bool {
	for part := range t.parts {
		if part < floor {
			return true
		}
	}
	return false
}

// floor is the lowest partition not wholly at or below the watermark: the
// rows of the partitions below it are not needed.
func (t *deliveryTracker) floor() int64 { return partitionOf(t.mark + 1) }

// advance moves the watermark below the oldest undelivered entry (to high
// when there is none) and reports whether it moved.
func (t *deliveryTracker) advance() bool {
	for t.head < len(t.order) {
		if _, undelivered := t.open[t.order[t.head]]; undelivered {
			break
		}
		t.head++
	}
	mark := t.high
	if t.head < len(t.order) {
		mark = t.order[t.head] - 1
	}
	if mark <= t.mark {
		return false
	}
	t.mark = mark
	return true
}

// rollback undoes the open transaction's changes.
func (t *deliveryTracker) rollback() {
	for _, seq := range t.tx.delivered {
		t.open[seq] = struct{}{}
	}
	for _, seq := range t.tx.dropped {
		t.open[seq] = struct{}{}
	}
	for _, seq := range t.order[t.tx.n:] {
		delete(t.open, seq)
	}
	for _, seq := range t.tx.set {
		t.parts[partitionOf(seq)][seq&(partitionSize-1)] = '0'
	}
	for _, seq := range t.tx.cleared {
		t.parts[partitionOf(seq)][seq&(partitionSize-1)] = '1'
	}
	t.order = t.order[:t.tx.n]
	t.head = t.tx.head
	t.mark, t.high = t.tx.mark, t.tx.high
	t.tx.reset()
}

// commit ends the transaction: it forgets the partitions the watermark
// passed (persistDeliveries deleted their rows) and compacts order: the
// delivered prefix is dropped, and so are delivered entries behind a
// long-undelivered one.
func (t *deliveryTracker) commit() {
	t.tx.reset()
	floor := t.floor()
	for part := range t.parts {
		if part < floor {
			delete(t.parts, part)
		}
	}
	const slack = 1024
	switch live := len(t.order) - t.head; {
	case live > 2*len(t.open)+slack:
		t.order = slices.DeleteFunc(t.order[t.head:], func(seq int64) bool {
			_, undelivered := t.open[seq]
			return !undelivered
		})
		t.head = 0
	case t.head > slack && t.head*2 > len(t.order):
		t.order = append(t.order[:0], t.order[t.head:]...)
		t.head = 0
	}
}

// persistDeliveries writes the open transaction's deliveries: it advances
// the watermark, writes the marks above it into the partition rows they
// changed and deletes the rows of the partitions it passed. It reports
// whether the watermark moved (journal_state needs an update).
func (w *writer) persistDeliveries() (bool, error) {
	t := &w.deliveries
	moved := t.advance()
	for _, seq := range t.tx.delivered {
		if seq > t.mark {
			t.flip(seq, '1')
			t.tx.set = append(t.tx.set, seq)
		}
	}
	floor := t.floor()
	for _, part := range t.tx.dirty {
		if part < floor {
			continue
		}
		if _, err := w.exec(deliveredUpsert, part, string(t.parts[part][:])); err != nil {
			return false, fmt.Errorf("store: record delivery marks: %w", err)
		}
	}
	if moved && t.hasPartsBelow(floor) {
		if _, err := w.exec(`DELETE FROM journal_delivered WHERE part < ?`, floor); err != nil {
			return false, fmt.Errorf("store: drop delivery marks below the watermark: %w", err)
		}
	}
	return moved, nil
}
