package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unsafe"
)

// entryColumns are the columns of a journal entry in journal_entries (the
// rows with their routes' direction, kind and names: journal_routes.go), in
// the order scanEntry reads them.
const entryColumns = `seq, time_ns, thread, conversation, direction, kind, sender, recipient, listener, root, sha256,
	envelope, diagnostics, profile`

// journalInsert inserts journal rows: eight values a row (doc.go,
// journal_routes.go), a diagnostics that is empty as NULL (optionalView).
// OR ROLLBACK: a failing row ends the whole transaction,
// which the writer rolls back and retries op by op anyway (writer.commit),
// so SQLite need not keep a statement journal to undo just this statement.
var journalInsert = newRowStatement(`INSERT OR ROLLBACK INTO journal_rows (`+rowColumns+`) VALUES `,
	`(?, ?, ?, ?, ?, ?, ?, ?)`, ``, journalInsertCols)

// rowColumns are the columns of a journal_rows row, in the
// order journalInsert binds them; journalInsertCols is their number.
const (
	rowColumns        = `seq, time_ns, thread, conversation, route, sha256, envelope, diagnostics`
	journalInsertCols = 8
)

// errOutOfSequence reports a journal append whose seq is not above every
// seq the journal already holds.
var errOutOfSequence = errors.New("journal append out of sequence")

// insertEntries journals the gathered appends, a multi-row INSERT per 64
// rows, and registers their (listener, profile) pairs.
func (w *writer) insertEntries(p *pending) error {
	if len(p.appends) == 0 {
		return nil
	}
	name := groupName(p.appendOps, "append")
	values := slices.Grow(p.values[:0], journalInsertCols*len(p.appends))
	p.times = slices.Grow(p.times[:0], len(p.appends))
	p.digests = slices.Grow(p.digests[:0], len(p.appends))
	p.texts = slices.Grow(p.texts[:0], len(p.appends))
	p.routeIDs = slices.Grow(p.routeIDs[:0], len(p.appends))
	for _, e := range p.appends {
		// Append validated the entry; the writer checks again what the
		// journal must never hold (an op built inside the package, a bug).
		if err := e.Validate(); err != nil {
			return fmt.Errorf("store: %s: %w", name, err)
		}
		if e.Seq <= w.txHigh {
			return fmt.Errorf("store: %s: %w: seq %d is not above %d", name, errOutOfSequence, e.Seq, w.txHigh)
		}
		w.txHigh = e.Seq
		route, err := w.routeID(e)
		if err != nil {
			return fmt.Errorf("store: %s: %w", name, err)
		}
		// The values view the entry's fields in place (rowvalues.go), and
		// the envelope as a string viewing e.Bytes, not a copy: the driver
		// copies them into SQLite's memory during the Exec, and the store
		// owns e.Bytes (Append takes ownership) and never changes it. The
		// time, route, digest slice and envelope string the entry does not
		// hold as such are kept in p's scratch slices, which are not
		// reallocated while the values point into them (sized for every
		// append first).
		p.times = append(p.times, e.Time.UnixNano())
		p.digests = append(p.digests, e.SHA256[:])
		p.texts = append(p.texts, unsafe.String(unsafe.SliceData(e.Bytes), len(e.Bytes)))
		p.routeIDs = append(p.routeIDs, route)
		i := len(p.times) - 1
		values = append(values,
			driver.NamedValue{Value: int64View(&e.Seq)},
			driver.NamedValue{Value: int64View(&p.times[i])},
			driver.NamedValue{Value: stringView(&e.Thread)},
			driver.NamedValue{Value: stringView(&e.Conversation)},
			driver.NamedValue{Value: int64View(&p.routeIDs[i])},
			driver.NamedValue{Value: bytesView(&p.digests[i])},
			driver.NamedValue{Value: stringView(&p.texts[i])},
			driver.NamedValue{Value: optionalView(&e.Diagnostics)})
		w.noteListener(e.Listener, e.Profile)
		w.deliveries.appended(e)
		w.keys.inserted(e)
	}
	p.values = values
	if err := w.names.insert(w, namesInsert, "enter journal names"); err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	if err := w.routes.insert(w, routesInsert, "enter journal routes"); err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	if _, err := w.execRowValues(journalInsert, len(p.appends), values); err != nil {
		return fmt.Errorf("store: %s: insert journal rows: %w", name, err)
	}
	if err := w.listeners.insert(w, listenerInsert, "register journal listeners"); err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	return nil
}

// tombstoneRows tombstones the journal rows whose seqs are the JSON array
// ?3, at ?1 (Unix ns) for reason ?2, with each row's metadata
// (journal_profiles.go); tombstoneSeqs tombstones, without metadata, those
// of the seqs that have no row (and no tombstone) yet.
const (
	tombstoneRows = `INSERT INTO journal_tombstones (seq, deleted_at, reason, time_ns, thread, conversation, direction,
	kind, sender, recipient, listener, root, sha256, profile)
	SELECT seq, ?1, ?2, time_ns, thread, conversation, direction, kind, sender, recipient, listener, root, sha256, profile
	FROM journal_entries WHERE seq IN (SELECT value FROM json_each(?3))`
	tombstoneSeqs = `INSERT OR IGNORE INTO journal_tombstones (seq, deleted_at, reason)
	SELECT value, ?1, ?2 FROM json_each(?3)`
)

// rowDelete deletes journal rows by seq.
var rowDelete = newRowStatement(`DELETE FROM journal_rows WHERE seq IN (`, `?`, `)`, 1)

// deleteEntries tombstones the journal entries seqs (at, Unix ns, for
// reason), keeping their metadata in the tombstones, and deletes their
// rows. Their delivery marks go with them (at the commit), and an
// undelivered entry is no longer waited for. Deleting a seq the journal
// does not hold only tombstones it.
func (w *writer) deleteEntries(seqs []int64, at int64, reason string) error {
	if len(seqs) == 0 {
		return nil
	}
	seqs = slices.Sorted(slices.Values(seqs))
	keys := make([]any, 0, len(seqs))
	list := make([]byte, 0, 12*len(seqs))
	list = append(list, '[')
	for i, seq := range seqs {
		w.deliveries.drop(seq)
		keys = append(keys, seq)
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, seq, 10)
	}
	list = append(list, ']')
	for _, q := range []string{tombstoneRows, tombstoneSeqs} {
		if _, err := w.exec(q, at, reason, string(list)); err != nil {
			return fmt.Errorf("tombstone seqs %d..%d: %w", seqs[0], seqs[len(seqs)-1], err)
		}
	}
	if _, err := w.execRows(rowDelete, len(seqs), keys); err != nil {
		return fmt.Errorf("delete seqs %d..%d: %w", seqs[0], seqs[len(seqs)-1], err)
	}
	return nil
}

// listenerInsert registers the (listener, profile) pairs that have journal
// entries.
var listenerInsert = newRowStatement(`INSERT OR IGNORE INTO journal_sweeps (listener, profile) VALUES `, `(?, ?)`, ``, 2)

// sweepKey is a (listener, profile) pair: one retention policy, one sweep
// cursor.
type sweepKey struct{ listener, profile string }

// journalListeners is the writer's set of the (listener, profile) pairs in
// journal_sweeps (the retention sweep's cursors, retention.go), so that
// registering a pair costs a statement only the first time the writer
// journals it. Unbounded, and empty at Open: the INSERT ignores the pairs
// that are there.
type journalListeners = idCache[sweepKey]

// unbounded is the limit of a cache that keeps every entry.
var unbounded = math.MaxInt

// noteListener records that the open transaction journals an entry of listener
// under profile.
func (w *writer) noteListener(listener, profile string) {
	k := sweepKey{listener, profile}
	if _, ok := w.listeners.get(k); !ok {
		w.listeners.add(k)
		w.listeners.fresh = append(w.listeners.fresh, listener, profile)
	}
}

// sweepCursor is one journal_sweeps row.
type sweepCursor struct {
	listener string
	profile  string
	swept    int64
}

// sweepCursors reads every journal listener and its sweep cursor.
func (s *Store) sweepCursors(ctx context.Context) ([]sweepCursor, error) {
	var out []sweepCursor
	err := s.read(func(db *sql.DB) error {
		var err error
		out, err = scanRows(ctx, db, `SELECT listener, profile, swept_seq FROM journal_sweeps ORDER BY listener, profile`,
			nil, func(rows *sql.Rows) (sweepCursor, error) {
				var c sweepCursor
				err := rows.Scan(&c.listener, &c.profile, &c.swept)
				return c, err
			})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: sweep: list listeners: %w", err)
	}
	return out, nil
}
