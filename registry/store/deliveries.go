package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Delivery marks are kept as a watermark plus exceptions rather than one row
// per message. A message that reached a listener (kind message, listener
// set: a "markable" entry, what Undelivered reports) is delivered once
// MarkDelivered recorded it:
//
//   - journal_state.delivered_seq, the watermark: every markable entry at or
//     below it is delivered;
//   - journal_deliveries: the markable entries above the watermark that were
//     delivered out of order, one row each.
//
// The writer knows the undelivered markable entries above the watermark
// (loaded at Open, then kept up to date from its own appends and marks) and
// at each commit moves the watermark to just below the oldest of them,
// dropping the rows it passes. Messages are handled in about the order they
// are journaled, so a batch of deliveries usually costs no row at all, where
// a row per mark cost about 1 µs of the writer's time per message.

// deliveryWatermarkV4 adds the watermark (migration 4). Marks recorded
// before it stay valid as rows of journal_deliveries.
const deliveryWatermarkV4 = `
ALTER TABLE journal_state ADD COLUMN delivered_seq INTEGER NOT NULL DEFAULT 0;
`

// watermarkExpr is the delivery watermark in a query.
const watermarkExpr = `(SELECT delivered_seq FROM journal_state WHERE id = 1)`

// undeliveredWhere selects, in the journal aliased j, the markable entries
// without a delivery.
const undeliveredWhere = `j.seq > ` + watermarkExpr + ` AND j.kind = 'message' AND j.listener <> ''
	AND NOT EXISTS (SELECT 1 FROM journal_deliveries AS d WHERE d.seq = j.seq)`

// deliveredExpr is true for an entry of the journal aliased j that has a
// delivery (meaningful for markable entries only).
const deliveredExpr = `(j.seq <= ` + watermarkExpr + `
	OR EXISTS (SELECT 1 FROM journal_deliveries AS d WHERE d.seq = j.seq))`

// markInsert records deliveries above the watermark.
var markInsert = newRowStatement(`INSERT OR IGNORE INTO journal_deliveries (seq, delivered_at) VALUES `,
	`(?, ?)`, ``, 2)

// delivery is one recorded mark of the open transaction.
type delivery struct{ seq, at int64 }

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
	// low is the lowest seq that may have a row in journal_deliveries (0:
	// none).
	low int64

	tx deliveryTx
}

// deliveryTx is what a transaction changed, to persist or to undo.
type deliveryTx struct {
	mark, high, low int64
	head, n         int
	delivered       []delivery // closed by a mark
	dropped         []int64    // closed by a deletion (retention)
	args            []any
}

// loadDeliveries reads the watermark, the undelivered markable entries and
// the lowest explicit mark; high is the journal's highest seq.
func loadDeliveries(ctx context.Context, conn *sql.Conn, high int64) (deliveryTracker, error) {
	t := deliveryTracker{high: high, open: make(map[int64]struct{})}
	if err := conn.QueryRowContext(ctx, `SELECT `+watermarkExpr+`, coalesce((SELECT min(seq) FROM journal_deliveries), 0)`).
		Scan(&t.mark, &t.low); err != nil {
		return t, fmt.Errorf("store: read the delivery watermark: %w", err)
	}
	t.mark = min(t.mark, high) // only a tampered database has it higher
	rows, err := conn.QueryContext(ctx, `SELECT j.seq FROM journal AS j WHERE `+undeliveredWhere+` ORDER BY j.seq`)
	if err != nil {
		return t, fmt.Errorf("store: read undelivered entries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return t, fmt.Errorf("store: read undelivered entries: %w", err)
		}
		t.order = append(t.order, seq)
		t.open[seq] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("store: read undelivered entries: %w", err)
	}
	return t, nil
}

// begin starts tracking a transaction.
func (t *deliveryTracker) begin() {
	t.tx.mark, t.tx.high, t.tx.low = t.mark, t.high, t.low
	t.tx.head, t.tx.n = t.head, len(t.order)
	t.tx.delivered = t.tx.delivered[:0]
	t.tx.dropped = t.tx.dropped[:0]
}

// appended records a journal append of the open transaction.
func (t *deliveryTracker) appended(e *Entry) {
	t.high = max(t.high, e.Seq)
	if e.Kind == Message && e.Listener != "" {
		t.order = append(t.order, e.Seq)
		t.open[e.Seq] = struct{}{}
	}
}

// deliver records the mark of seq at time at. Marks of entries that are
// delivered already, are not markable or were deleted are no-ops; a seq
// above every journaled one was never journaled (ErrNotFound).
func (t *deliveryTracker) deliver(seq, at int64) error {
	switch _, undelivered := t.open[seq]; {
	case undelivered:
		delete(t.open, seq)
		t.tx.delivered = append(t.tx.delivered, delivery{seq, at})
	case seq > t.high:
		return fmt.Errorf("%w: journal seq %d", ErrNotFound, seq)
	}
	return nil
}

// drop forgets seq, deleted by retention, as undelivered.
func (t *deliveryTracker) drop(seq int64) {
	if _, undelivered := t.open[seq]; undelivered {
		delete(t.open, seq)
		t.tx.dropped = append(t.tx.dropped, seq)
	}
}

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
	for _, d := range t.tx.delivered {
		t.open[d.seq] = struct{}{}
	}
	for _, seq := range t.tx.dropped {
		t.open[seq] = struct{}{}
	}
	for _, seq := range t.order[t.tx.n:] {
		delete(t.open, seq)
	}
	t.order = t.order[:t.tx.n]
	t.head = t.tx.head
	t.mark, t.high, t.low = t.tx.mark, t.tx.high, t.tx.low
	t.tx.delivered, t.tx.dropped = t.tx.delivered[:0], t.tx.dropped[:0]
}

// commit ends the transaction and compacts order: the delivered prefix is
// dropped, and so are delivered entries behind a long-undelivered one.
func (t *deliveryTracker) commit() {
	t.tx.delivered, t.tx.dropped = t.tx.delivered[:0], t.tx.dropped[:0]
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
// the watermark, records the marks above it and deletes the rows below it.
// It reports whether the watermark moved (journal_state needs an update).
func (w *writer) persistDeliveries() (bool, error) {
	t := &w.deliveries
	moved := t.advance()
	args := t.tx.args[:0]
	for _, d := range t.tx.delivered {
		if d.seq > t.mark {
			args = append(args, d.seq, d.at)
			if t.low == 0 || d.seq < t.low {
				t.low = d.seq
			}
		}
	}
	t.tx.args = args
	if len(args) > 0 {
		if _, err := w.execRows(markInsert, len(args)/2, args); err != nil {
			return false, fmt.Errorf("store: record delivery marks: %w", err)
		}
	}
	if moved && t.low != 0 && t.low <= t.mark {
		if _, err := w.exec(`DELETE FROM journal_deliveries WHERE seq <= ?`, t.mark); err != nil {
			return false, fmt.Errorf("store: drop delivery marks below the watermark: %w", err)
		}
		lows, err := w.queryInt64s(`SELECT coalesce(min(seq), 0) FROM journal_deliveries`)
		if err != nil {
			return false, fmt.Errorf("store: drop delivery marks below the watermark: %w", err)
		}
		t.low = lows[0]
	}
	return moved, nil
}
