package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// contextExpiriesSchema keeps the notes of removed context histories
// (registry.ExpiryNote): a conversation's history the context buffer
// removed — idle for platform.context_buffer.ttl_hours, or evicted to keep
// at most max_threads histories — leaves a row, so that a conversation
// continued after a restart still tells its model and its user that the
// earlier history is gone, and why. A row is pending until its thread's
// history begins again, then goes with that history; it is deleted with
// it (DeleteExpiry) or when the buffer's bounds drop it: at most
// registry.ContextConfig.MaxNotes pending rows (max_threads, at least
// 1000), none older than its NoteTTL (30 days), plus one per live
// history. Only conversations an outside party began with an agent get
// one.
//
//	SELECT thread, reason, datetime(removed_ns / 1e9, 'unixepoch') FROM context_expiries;
const contextExpiriesSchema = `
CREATE TABLE IF NOT EXISTS context_expiries (
	thread      TEXT    PRIMARY KEY,
	reason      TEXT    NOT NULL CHECK (reason IN ('ttl', 'evicted')),
	last_ns     INTEGER,
	removed_ns  INTEGER,
	ttl_ns      INTEGER NOT NULL DEFAULT 0,
	max_threads INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
`

// expiriesTable is context_expiries: one row per thread, written like the
// other kernel tables (coalesced per batch). Not born with the slots: a
// note outlives the history it tells of.
var expiriesTable = &kernelTable{name: "context_expiries",
	upsert: newKernelStatement(`INSERT OR REPLACE INTO context_expiries (thread, reason, last_ns, removed_ns, ttl_ns,
		max_threads) VALUES `, `(?, ?, ?, ?, ?, ?)`, ``, 6),
	delete: newKernelStatement(`DELETE FROM context_expiries WHERE thread IN (`, `?`, `)`, 1)}

// ExpiryRow is the note of a removed context history as the store keeps it
// (see registry.ExpiryNote).
type ExpiryRow struct {
	// Thread is the thread whose history was removed.
	Thread string
	// Reason is "ttl" or "evicted".
	Reason string
	// LastActive is when the history was last appended to, Removed when
	// it was removed (kept exactly, loaded in UTC).
	LastActive, Removed time.Time
	// TTL is the idle time after which it was removed ("ttl").
	TTL time.Duration
	// MaxThreads is the number of histories kept ("evicted").
	MaxThreads int
}

// PutExpiry enqueues an insert-or-replace of thread's note. Asynchronous,
// ordered with the slot writes.
func (s *Store) PutExpiry(r ExpiryRow) error {
	if r.Thread == "" || (r.Reason != "ttl" && r.Reason != "evicted") {
		return fmt.Errorf("%w: expiry row needs a thread and reason ttl or evicted (thread %q, reason %q)", ErrInvalid,
			r.Thread, r.Reason)
	}
	last, err := encodeTime("last active", r.LastActive)
	if err != nil {
		return err
	}
	removed, err := encodeTime("removed", r.Removed)
	if err != nil {
		return err
	}
	return s.enqueueAsync(&op{kind: opPut, name: "put expiry", table: expiriesTable, key: r.Thread, group: r.Thread,
		row: []any{r.Thread, r.Reason, last, removed, int64(r.TTL), int64(r.MaxThreads)}})
}

// DeleteExpiry enqueues the deletion of thread's note.
func (s *Store) DeleteExpiry(thread string) error {
	return s.enqueueAsync(&op{kind: opDelete, name: "delete expiry", table: expiriesTable, groups: []string{thread}})
}

// LoadExpiries returns every committed note ordered by thread.
func (s *Store) LoadExpiries() ([]ExpiryRow, error) {
	return load(context.Background(), s, "load expiries", `SELECT thread, reason, last_ns, removed_ns, ttl_ns,
		max_threads FROM context_expiries ORDER BY thread`, nil, func(rows *sql.Rows) (ExpiryRow, error) {
		var (
			r             ExpiryRow
			last, removed sql.NullInt64
		)
		err := rows.Scan(&r.Thread, &r.Reason, &last, &removed, &r.TTL, &r.MaxThreads)
		r.LastActive, r.Removed = decodeTime(last), decodeTime(removed)
		return r, err
	})
}
