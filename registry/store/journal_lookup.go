package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// journalPartitionBits sets the journal's partitions: seqs s and t share a
// partition when s>>bits == t>>bits (1024 consecutive seqs). Lookup keys are
// stored per partition (journal_keys.go). It is part of the schema
// (migrations 3 and 5): changing it takes a new migration.
const journalPartitionBits = 10

// partitionExpr is the partition expression of the lookup indexes of
// migrations 3 and 4 (dropped by migration 5, journal_keys.go).
var partitionExpr = "(seq >> " + strconv.Itoa(journalPartitionBits) + ")"

// migrationPartitionedLookups (superseded by the lookup keys of migration 5,
// journal_keys.go) replaces the (thread, seq) and (conversation,
// seq) indexes by indexes on (partition, thread) and (partition,
// conversation).
//
// Thread and conversation ids are random UUIDs, so in an index led by them
// every journal row lands on a random leaf page: each commit dirtied about
// one page per row per index, and writing those pages to the WAL and back
// to the database cost three times the rest of the append (go-deps.md
// §2.7; see BenchmarkJournalFlow). Led by the partition, new entries land in
// the last partition's few leaf pages, which every commit rewrites anyway.
var migrationPartitionedLookups = `
DROP INDEX journal_thread;
DROP INDEX journal_conversation;
CREATE INDEX journal_thread_part ON journal (` + partitionExpr + `, thread);
CREATE INDEX journal_conversation_part ON journal (` + partitionExpr + `, conversation);
`

// keyProbe reads the lookup keys of one bucket in every summarised
// partition, probing journal_keys's primary key once per partition: about
// 7 µs per 1024 journal rows on the test machine (BenchmarkThreadLookup), so
// 7 ms in a million-row journal. Callers that need every thread should read
// the journal once in seq order rather than look each thread up.
const keyProbe = `WITH RECURSIVE p(n) AS (
		SELECT min(part) FROM journal_keys
		UNION ALL
		SELECT n + 1 FROM p WHERE n < (SELECT max(part) FROM journal_keys))
	SELECT part, keys FROM p CROSS JOIN journal_keys ON part = p.n AND bucket = ?1 ORDER BY part`

// lookup returns the committed entries whose thread (kind keyThread) or
// conversation (keyConversation) is id, in seq order: the summarised
// partitions through their lookup keys, the rest by scanning.
func (r *Reader) lookup(kind byte, id string) ([]Entry, error) {
	k := lookupKey(kind, id)
	match := func(e *Entry) bool {
		if kind == keyThread {
			return e.Thread == id
		}
		return e.Conversation == id
	}
	var out []Entry
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		var (
			seqs []int64
			tail int64 // first seq not covered by lookup keys
		)
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(part) + 1, 0) FROM journal_keys`).Scan(&tail); err != nil {
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		tail <<= journalPartitionBits
		rows, err := tx.QueryContext(ctx, keyProbe, keyBucket(k))
		if err != nil {
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		for rows.Next() {
			var (
				part int64
				keys []byte
			)
			if err := rows.Scan(&part, &keys); err != nil {
				rows.Close()
				return fmt.Errorf("store: lookup keys: %w", err)
			}
			seqs = append(seqs, keySeqs(part, keys, k)...)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		var cache segmentCache
		for _, seq := range seqs {
			e, ok, err := cache.entry(ctx, tx, seq)
			if err != nil {
				return err
			}
			if ok && match(e) {
				out = append(out, *e)
			}
		}
		return scanForward(ctx, tx, tail-1, func(s *segment) error {
			for i := range s.entries {
				if e := &s.entries[i]; e.Seq >= tail && match(e) {
					out = append(out, *e)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
