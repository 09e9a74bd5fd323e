package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
)

// lookupMany reads, in one snapshot, the committed entries of several
// threads (kind keyThread) or conversations (keyConversation) and returns
// them by id, each id's in seq order (an id without entries is absent).
//
// Looking ids up one by one probes every partition once per id (lookup,
// ~7 µs per partition and id); lookupMany reads the lookup keys of the
// ids' buckets in one pass over journal_keys (its 16 bytes per journal
// row, not the rows), then the matching rows by seq, and scans only the
// partitions not yet summarised.
func (r *Reader) lookupMany(kind byte, ids []string) (map[string][]Entry, error) {
	out := map[string][]Entry{}
	if len(ids) == 0 {
		return out, nil
	}
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return lookupManyIn(ctx, tx, kind, ids, func(e *Entry) error {
			id := e.Thread
			if kind == keyConversation {
				id = e.Conversation
			}
			out[id] = append(out[id], *e)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, es := range out {
		n += len(es)
	}
	r.lookupRows.Add(int64(n))
	return out, nil
}

// lookupManyIn calls fn, in seq order, with every committed entry of tx
// whose thread (kind keyThread) or conversation (keyConversation) is one
// of ids.
func lookupManyIn(ctx context.Context, tx *sql.Tx, kind byte, ids []string, fn func(e *Entry) error) error {
	column := "thread"
	if kind == keyConversation {
		column = "conversation"
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	byBucket := map[int64][]uint64{}
	for _, id := range ids {
		k := lookupKey(kind, id)
		if b := keyBucket(k); !slices.Contains(byBucket[b], k) {
			byBucket[b] = append(byBucket[b], k)
		}
	}
	rows, tail, err := bucketKeys(ctx, tx, byBucket)
	if err != nil {
		return err
	}
	seqs := []int64{}
	for rows.Next() {
		var (
			part, bucket int64
			keys         sql.RawBytes // read before the next row
		)
		if err := rows.Scan(&part, &bucket, &keys); err != nil {
			rows.Close()
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		for _, k := range byBucket[bucket] {
			seqs = append(seqs, keySeqs(part, keys, k)...)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: lookup keys: %w", err)
	}
	seqList, err := json.Marshal(seqs)
	if err != nil {
		return err
	}
	idList, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	query := `SELECT ` + entryColumns + ` FROM journal_entries WHERE seq IN (SELECT value FROM json_each(?1))
			AND ` + column + ` IN (SELECT value FROM json_each(?2))
		UNION ALL SELECT ` + entryColumns + ` FROM journal_entries WHERE seq >= ?3
			AND ` + column + ` IN (SELECT value FROM json_each(?2)) ORDER BY seq`
	return eachEntry(ctx, tx, query, []any{string(seqList), string(idList), tail}, fn)
}

// bucketKeys returns the rows (part, bucket, keys) of the lookup-key
// buckets named by byBucket's keys, and the first seq the lookup keys do
// not cover yet (the rows from it on must be scanned).
func bucketKeys(ctx context.Context, tx *sql.Tx, byBucket map[int64][]uint64) (*sql.Rows, int64, error) {
	var tail int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(part) + 1, 0) FROM journal_keys`).Scan(&tail); err != nil {
		return nil, 0, fmt.Errorf("store: lookup keys: %w", err)
	}
	tail <<= journalPartitionBits
	buckets := make([]int64, 0, len(byBucket))
	for b := range byBucket {
		buckets = append(buckets, b)
	}
	bucketList, err := json.Marshal(buckets)
	if err != nil {
		return nil, 0, err
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT part, bucket, keys FROM journal_keys WHERE bucket IN (SELECT value FROM json_each(?1))`,
		string(bucketList))
	if err != nil {
		return nil, 0, fmt.Errorf("store: lookup keys: %w", err)
	}
	return rows, tail, nil
}
