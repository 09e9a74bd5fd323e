package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The journal records the security profile (seed 000 §8.4) of every entry,
// so that each profile's retention can be applied to the entries journaled
// under it, and keeps the metadata of every pruned entry.
//
//   - an entry's route (journal_routes.go) holds the profile of the thread
//     the entry was journaled on, as the thread registry names it: "" for
//     the organism's implicit profile (no profiles: section, or a thread
//     begun without one), else a profile name or an intersection "a&b".
//     NULL means "not recorded": the entry was migrated from the legacy
//     layout (legacy.go), which did not record it. Retention treats NULL
//     as "" — the listener's retention, else journal.retention — which is
//     what governed those entries when they were written.
//   - journal_tombstones holds the pruned entry's metadata (time, thread,
//     conversation, direction, kind, sender, recipient, listener, root,
//     sha256, profile), copied from the row when retention deletes it, so
//     the audit trail of a pruned entry stays: only its bytes go. The
//     columns are NULL for tombstones migrated from the legacy layout and
//     for the seqs of appends that failed (they never had a row).
//   - the journal view shows both: journal_rows with pruned NULL, and the
//     tombstones with payload, envelope and diagnostics NULL and pruned
//     saying why and when ("prune_on_delivery at 2026-…Z").
//   - journal_sweeps keeps the retention sweep's cursor per (listener,
//     profile) pair, since each pair has one retention policy
//     (retention_walk.go).
//
// The journal stays append-only: no row is ever updated; retention
// deletes rows (after their tombstone).

// journalViewSchema is the journal view: the rows and the tombstones.
const journalViewSchema = `CREATE VIEW IF NOT EXISTS journal AS SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z' AS time,
	thread, conversation, direction, kind, sender, recipient, listener, root,
	CASE WHEN instr(envelope, '</meta>') > 0 AND substr(envelope, -10) = '</message>'
		THEN substr(envelope, instr(envelope, '</meta>') + 7, length(envelope) - instr(envelope, '</meta>') - 16)
		ELSE envelope END AS payload,
	diagnostics, envelope, time_ns, profile, NULL AS pruned
FROM journal_entries
UNION ALL SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z',
	thread, conversation, direction, kind, sender, recipient, listener, root,
	NULL, NULL, NULL, time_ns, profile,
	reason || ' at ' || strftime('%Y-%m-%dT%H:%M:%S', deleted_at / 1000000000, 'unixepoch') || 'Z'
FROM journal_tombstones;`

// Pruned is what the journal keeps of an entry retention deleted: the
// entry's metadata, from its tombstone, without its bytes.
type Pruned struct {
	// Entry holds the pruned entry's metadata: seq, time, thread,
	// conversation, direction, kind, sender, recipient, listener, root,
	// SHA-256 and profile. Bytes and Diagnostics are empty.
	Entry
	// Reason is the policy that pruned it, as Retention.String writes it.
	Reason string
	// At is when it was pruned.
	At time.Time
	// NoMetadata marks a tombstone without metadata (one migrated from the
	// legacy layout, which did not keep it, or of an append that failed):
	// Entry holds only Seq.
	NoMetadata bool
}

// PrunedOf returns the pruned entries of the conversation or thread id, in
// seq order (tombstones migrated from the legacy layout hold no metadata
// and are not found by id).
func (r *Reader) PrunedOf(id string) ([]Pruned, error) {
	return r.PrunedOfAfter(id, 0)
}

// PrunedOfAfter is PrunedOf for the seqs above after: the bound is part of
// the read, as ThreadAfter's is.
func (r *Reader) PrunedOfAfter(id string, after int64) ([]Pruned, error) {
	var out []Pruned
	err := r.read(func(db *sql.DB) error {
		var err error
		out, err = scanPruned(context.Background(), db, `SELECT `+prunedColumns+`
			FROM journal_tombstones WHERE seq > ?2 AND (conversation = ?1 OR thread = ?1) ORDER BY seq`, id, max(after, 0))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read pruned entries: %w", err)
	}
	return out, nil
}
