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

// journalViewSchema is the journal view: the rows and the tombstones. It is
// dropped and created again at every Open (a view holds no data), so a
// database written by an earlier build reads with this definition too.
//
// Its payload column is the envelope's payload element, cut in SQL as
// stage.EnvelopePayload cuts it in Go, so that sqlite3 and xmlpipe show the
// same payload: from the end tag of the root's first child (<meta>, named
// as its start tag right after the root's writes it: "</meta>", or
// "</ns0:meta>" in an envelope as Python's ElementTree writes one) up to the
// root's end tag ("</message>", "</ns0:message>"), without the blanks
// around it. An entry that is no such envelope (a dead letter's raw bytes)
// shows its envelope whole. (The cut relies on the first end tag of the
// <meta>'s name closing the <meta>: a foreign element of the same prefixed
// name inside <meta> would end it early, which the envelope schema's
// elements never do.)
//
// The nested SELECTs name the cut's steps: the root's and the first child's
// names, then their end tags, then where the payload starts and ends.
const journalViewSchema = `DROP VIEW IF EXISTS journal;
CREATE VIEW journal AS SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z' AS time,
	thread, conversation, direction, kind, sender, recipient, listener, root,
	CASE WHEN payload_at > 0 AND payload_end > payload_at
		THEN trim(substr(envelope, payload_at, payload_end - payload_at), ' ' || char(9, 10, 13))
		ELSE envelope END AS payload,
	diagnostics, envelope, time_ns, profile, NULL AS pruned
FROM (SELECT *,
		nullif(instr(envelope, meta_close), 0) + length(meta_close) AS payload_at,
		CASE WHEN length(root_close) > 3 AND substr(envelope, -length(root_close)) = root_close
			THEN length(envelope) - length(root_close) + 1 END AS payload_end
	FROM (SELECT *, '</' || root_name || '>' AS root_close,
			CASE WHEN substr(meta_tag, 1, 1) = '<' AND substr(meta_tag, 2, 1) NOT IN ('/', '?')
				THEN '</' || substr(meta_tag, 2, min(instr(meta_tag || ' ', ' '), instr(meta_tag || '>', '>')) - 2) || '>'
			END AS meta_close
		FROM (SELECT *,
				CASE WHEN substr(envelope, 1, 1) = '<' AND substr(envelope, 2, 1) NOT IN ('/', '?')
					THEN substr(envelope, 2, min(instr(envelope || ' ', ' '), instr(envelope || '>', '>')) - 2)
				END AS root_name,
				ltrim(substr(envelope, instr(envelope, '>') + 1, 256), ' ' || char(9, 10, 13)) AS meta_tag
			FROM journal_entries)))
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
