package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Lookup keys find a thread's or a conversation's journal entries without a
// per-row index.
//
// An index led by a thread or conversation id (random UUIDs) dirties a leaf
// page per row at every commit (doc.go). Instead, when a partition (1024 consecutive
// seqs) is closed — the writer appends a seq of a later partition — the
// writer stores its thread and conversation ids as lookup keys: a 64-bit
// hash of the id and the entry's offset in the partition, sorted, split into
// keyBuckets rows by the hash's top bits. That is keyBuckets small inserts
// per 1024 appends, at the right edge of journal_keys.
//
// A lookup probes the id's bucket in every summarised partition, reads the
// matching rows (checking the id, so hash collisions cost a read, never a
// wrong answer) and scans the partitions after the last summarised one, which
// are at most the open partition while the writer keeps up.
//
// Invariant: every partition up to the highest one in journal_keys is
// summarised, so lookups scan the journal from the partition after it. The
// writer summarises partitions in order, in the transaction that closes
// them, and catches up on start (if a summary failed); the retention sweep
// deletes the keys of partitions left without rows below the journal's
// first seq.

// keyBucketBits sets the buckets of a partition's lookup keys: 64 rows of
// about 32 keys each for a full partition.
const keyBucketBits = 6

// keyRecordSize is the encoded size of one lookup key (keyRecord, 8 bytes
// big-endian).
const keyRecordSize = 8

// Key kinds: a thread id and a conversation id hash differently.
const (
	keyThread       byte = 't'
	keyConversation byte = 'c'
)

// lookupKey hashes id as a lookup key of kind (FNV-1a with a final mix).
func lookupKey(kind byte, id string) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	k := uint64(offset64)
	k = (k ^ uint64(kind)) * prime64
	for i := 0; i < len(id); i++ {
		k = (k ^ uint64(id[i])) * prime64
	}
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

// keyBucket is the bucket of a lookup key.
func keyBucket(k uint64) int64 { return int64(k >> (64 - keyBucketBits)) }

// keyOffBits is the low bits of a keyRecord that hold the entry's offset in
// its partition.
const keyOffBits = 16

// keyRecord is a lookup key's top 48 bits with the entry's offset in its
// partition in the low 16: records sort by key, then offset, as integers.
func keyRecord(k uint64, seq int64) uint64 {
	return k&^(1<<keyOffBits-1) | uint64(seq&(1<<journalPartitionBits-1))
}

// rowKeyRecords returns the key records of the journal row seq under its
// thread and under its conversation.
func rowKeyRecords(seq int64, thread, conversation string) (t, c uint64) {
	return keyRecord(lookupKey(keyThread, thread), seq), keyRecord(lookupKey(keyConversation, conversation), seq)
}

// keySeqs returns the seqs of partition part whose record in the bucket
// blob keys has the key k.
func keySeqs(part int64, keys []byte, k uint64) []int64 {
	n := len(keys) / keyRecordSize
	at := func(i int) uint64 { return binary.BigEndian.Uint64(keys[i*keyRecordSize:]) }
	want := k >> keyOffBits
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at(mid)>>keyOffBits < want {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	var out []int64
	for j := lo; j < n && at(j)>>keyOffBits == want; j++ {
		out = append(out, part<<journalPartitionBits|int64(at(j)&(1<<keyOffBits-1)))
	}
	return out
}

// keySummaries is the writer's record of which partitions have lookup keys,
// and the keys of the rows it inserted into partitions that have none yet.
type keySummaries struct {
	// next is the first partition without keys as committed; txNext the
	// same inside the open transaction.
	next, txNext int64
	// tracked is the first partition all of whose rows this writer
	// inserted: from it on, keys come from memory instead of being read
	// back.
	tracked int64
	// recs holds the records of committed rows by partition, for the
	// tracked partitions not yet summarised; txRecs those of the open
	// transaction's rows.
	recs   map[int64][]uint64
	txRecs []partRecord
	// scratch buffers, reused.
	sorted []uint64
	args   []any
}

// partRecord is a keyRecord of partition part.
type partRecord struct {
	part int64
	rec  uint64
}

// newKeySummaries starts the record of a writer whose next append gets
// seq nextSeq.
func newKeySummaries(nextSeq int64) keySummaries {
	tracked := partitionOf(nextSeq)
	if nextSeq > 1 && partitionOf(nextSeq-1) == tracked {
		tracked++ // rows of nextSeq's partition may predate this writer (seqs start at 1)
	}
	return keySummaries{tracked: tracked, recs: map[int64][]uint64{}}
}

// inserted notes the keys of a journal row the open transaction inserted.
func (k *keySummaries) inserted(e *Entry) {
	p := partitionOf(e.Seq)
	if p < k.tracked || p < k.txNext {
		return
	}
	t, c := rowKeyRecords(e.Seq, e.Thread, e.Conversation)
	k.txRecs = append(k.txRecs, partRecord{p, t}, partRecord{p, c})
}

// commit keeps the open transaction's records and drops those of
// partitions summarised since.
func (k *keySummaries) commit() {
	for _, r := range k.txRecs {
		if r.part >= k.txNext {
			k.recs[r.part] = append(k.recs[r.part], r.rec)
		}
	}
	k.txRecs = k.txRecs[:0]
	for p := range k.recs {
		if p < k.txNext {
			delete(k.recs, p)
		}
	}
	k.next = k.txNext
}

// rollback forgets the open transaction's records and summaries.
func (k *keySummaries) rollback() {
	k.txRecs = k.txRecs[:0]
	k.txNext = k.next
}

// insertKeys inserts lookup-key rows (part, bucket, keys).
var insertKeys = newRowStatement(`INSERT INTO journal_keys (part, bucket, keys) VALUES `, `(?, ?, ?)`, ``, 3)

// loadKeySummaries reads where the writer's summaries stand: after the
// highest summarised partition, or at the journal's first partition.
func (w *writer) loadKeySummaries() error {
	next, err := w.conn.queryInt64(`SELECT coalesce((SELECT max(part) + 1 FROM journal_keys),
		(SELECT min(seq) FROM journal_rows) >> ` + strconv.Itoa(journalPartitionBits) + `, 0)`)
	if err != nil {
		return fmt.Errorf("store: read lookup keys: %w", err)
	}
	w.keys.next, w.keys.txNext = next, next
	return nil
}

// summarizeBefore writes the lookup keys of every partition before part
// that has none yet, inside the open transaction. Partitions without rows
// are skipped in one step.
func (w *writer) summarizeBefore(part int64) error {
	for w.keys.txNext < part {
		firsts, err := w.queryInt64s(`SELECT seq FROM journal_rows WHERE seq >= ? ORDER BY seq LIMIT 1`,
			w.keys.txNext<<journalPartitionBits)
		if err != nil {
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		if len(firsts) == 0 || partitionOf(firsts[0]) >= part {
			w.keys.txNext = part
			return nil
		}
		p := max(w.keys.txNext, partitionOf(firsts[0]))
		if err := w.summarize(p); err != nil {
			return fmt.Errorf("store: lookup keys of partition %d: %w", p, err)
		}
		w.keys.txNext = p + 1
	}
	return nil
}

// summarizeClosed writes, inside the open transaction, the lookup keys of
// the partitions the transaction closed (those before part). A failure
// costs speed, not entries: it is rolled back to a savepoint and logged,
// the batch's appends commit, and the partitions are summarised by a later
// transaction or the next start.
func (w *writer) summarizeClosed(part int64) {
	if w.keys.txNext >= part {
		return
	}
	from := w.keys.txNext
	if _, err := w.exec(`SAVEPOINT lookup_keys`); err != nil {
		w.log.Warn("store: journal lookup keys", "err", err)
		return
	}
	err := w.summarizeBefore(part)
	if err != nil {
		w.keys.txNext = from
		_, _ = w.exec(`ROLLBACK TO lookup_keys`)
		w.log.Warn("store: journal lookup keys deferred", "partition", from, "err", err)
	}
	if _, rerr := w.exec(`RELEASE lookup_keys`); rerr != nil {
		w.log.Warn("store: journal lookup keys", "err", rerr)
	}
}

// summarize inserts partition part's lookup keys, from memory when the
// writer inserted all its rows, else read back from the journal.
func (w *writer) summarize(part int64) error {
	recs := w.keys.sorted[:0]
	if part >= w.keys.tracked {
		recs = append(recs, w.keys.recs[part]...)
		for _, r := range w.keys.txRecs {
			if r.part == part {
				recs = append(recs, r.rec)
			}
		}
	} else {
		var err error
		if recs, err = w.readRowKeys(part, recs); err != nil {
			return err
		}
	}
	w.keys.sorted = recs
	if len(recs) == 0 {
		return nil
	}
	slices.Sort(recs)
	args, rowsN := w.keys.args[:0], 0
	for i := 0; i < len(recs); {
		b := keyBucket(recs[i])
		j := i
		for j < len(recs) && keyBucket(recs[j]) == b {
			j++
		}
		blob := make([]byte, 0, (j-i)*keyRecordSize)
		for _, r := range recs[i:j] {
			blob = binary.BigEndian.AppendUint64(blob, r)
		}
		args = append(args, part, b, blob)
		rowsN++
		i = j
	}
	_, err := w.execRows(insertKeys, rowsN, args)
	clear(args)
	w.keys.args = args[:0]
	return err
}

// readRowKeys appends the key records of partition part's rows, read
// from the journal, to recs.
func (w *writer) readRowKeys(part int64, recs []uint64) ([]uint64, error) {
	first := part << journalPartitionBits
	w.counters.statements.Add(1)
	err := w.conn.query(`SELECT seq, thread, conversation FROM journal_rows WHERE seq >= ? AND seq < ?`,
		[]any{first, first + partitionSize}, func(rows *sql.Rows) error {
			var (
				seq                  int64
				thread, conversation string
			)
			if err := rows.Scan(&seq, &thread, &conversation); err != nil {
				return err
			}
			t, c := rowKeyRecords(seq, thread, conversation)
			recs = append(recs, t, c)
			return nil
		})
	return recs, err
}

// catchUpKeys summarises, in transactions of keyCatchUpParts partitions,
// every closed partition that has no lookup keys yet: after the migration
// that introduced them, or if the writer stopped between closing a
// partition and summarising it. Until then, lookups scan those partitions.
func (w *writer) catchUpKeys() error {
	high, err := w.conn.queryInt64(`SELECT coalesce(max(seq), 0) FROM journal_rows`)
	if err != nil {
		return fmt.Errorf("store: lookup keys: %w", err)
	}
	end := partitionOf(high)
	if w.keys.next >= end {
		return nil
	}
	w.log.Info("store: writing journal lookup keys", "partitions", end-w.keys.next)
	for w.keys.next < end {
		upTo := min(end, w.keys.next+keyCatchUpParts)
		if _, err := w.exec(`BEGIN IMMEDIATE`); err != nil {
			return fmt.Errorf("store: lookup keys: begin: %w", err)
		}
		if err := w.summarizeBefore(upTo); err != nil {
			w.keys.rollback()
			_, _ = w.exec(`ROLLBACK`)
			return err
		}
		if _, err := w.exec(`COMMIT`); err != nil {
			w.keys.rollback()
			return fmt.Errorf("store: lookup keys: commit: %w", err)
		}
		w.keys.commit()
	}
	return nil
}

// keyCatchUpParts is how many partitions catchUpKeys summarises per
// transaction.
const keyCatchUpParts = 64

// pruneKeysQuery deletes the lookup keys of partitions below the journal's
// first row (all of them when the journal is empty).
var pruneKeysQuery = `DELETE FROM journal_keys WHERE part < coalesce((SELECT min(seq) FROM journal_rows) >> ` +
	strconv.Itoa(journalPartitionBits) + `, (SELECT max(part) + 1 FROM journal_keys))`

// keyProbe reads the lookup keys of one bucket (?1) in every summarised
// partition from partition ?2 on, probing journal_keys's primary key once per partition: about
// 7 µs per 1024 journal rows on the test machine (BenchmarkThreadLookup), so
// 7 ms in a million-row journal. Callers that need every thread should read
// the journal once in seq order rather than look each thread up.
const keyProbe = `WITH RECURSIVE p(n) AS (
		SELECT max(min(part), ?2) FROM journal_keys
		UNION ALL
		SELECT n + 1 FROM p WHERE n < (SELECT max(part) FROM journal_keys))
	SELECT part, keys FROM p CROSS JOIN journal_keys ON part = p.n AND bucket = ?1 ORDER BY part`

// lookup returns, in seq order, up to limit (<= 0: no limit) committed
// entries with seq above after whose thread (kind keyThread) or
// conversation (keyConversation) is id: the summarised partitions from
// after's on through their lookup keys, the rest by scanning from after
// on, so a reader that follows a thread or a conversation reads only what
// is new.
func (r *Reader) lookup(kind byte, id string, after int64, limit int) ([]Entry, error) {
	k := lookupKey(kind, id)
	column := "thread"
	if kind == keyConversation {
		column = "conversation"
	}
	after = max(after, 0)
	if limit <= 0 {
		limit = -1
	}
	var out []Entry
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		var tail int64 // first seq not covered by lookup keys
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(part) + 1, 0) FROM journal_keys`).Scan(&tail); err != nil {
			return fmt.Errorf("store: lookup keys: %w", err)
		}
		tail = max(tail<<journalPartitionBits, after+1)
		seqs, err := probeKeys(ctx, tx, k, after>>journalPartitionBits)
		if err != nil {
			return err
		}
		seqs = slices.DeleteFunc(seqs, func(seq int64) bool { return seq <= after })
		list, err := json.Marshal(seqs)
		if err != nil {
			return err
		}
		return eachEntry(ctx, tx, lookupQuery(column), []any{id, tail, string(list), limit},
			func(e *Entry) error {
				out = append(out, *e)
				return nil
			})
	})
	if err != nil {
		return nil, err
	}
	r.lookupRows.Add(int64(len(out)))
	return out, nil
}

// lookupQuery selects the first ?4 journal rows whose column is ?1 among
// the seqs of the JSON array ?3 and from seq ?2 on.
func lookupQuery(column string) string {
	return `SELECT ` + entryColumns + ` FROM journal_entries WHERE seq IN (SELECT value FROM json_each(?3)) AND ` + column + ` = ?1
		UNION ALL SELECT ` + entryColumns + ` FROM journal_entries WHERE seq >= ?2 AND ` + column + ` = ?1 ORDER BY seq LIMIT ?4`
}

// probeKeys returns the seqs whose lookup key is k, in the summarised
// partitions from partition from on.
func probeKeys(ctx context.Context, tx *sql.Tx, k uint64, from int64) ([]int64, error) {
	seqs := []int64{} // [] in JSON, not null
	err := eachRow(ctx, tx, keyProbe, []any{keyBucket(k), from}, func(rows *sql.Rows) error {
		var (
			part int64
			keys []byte
		)
		err := rows.Scan(&part, &keys)
		seqs = append(seqs, keySeqs(part, keys, k)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: lookup keys: %w", err)
	}
	return seqs, nil
}
