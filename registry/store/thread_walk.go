package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A filtered page of threads (GET /api/v1/threads?status=error, ?agent=)
// is found by walking the journal backwards, as the newest page is
// (thread_page.go), instead of grouping the whole journal: the walk reads
// seq and id from the journal's end (or from a cursor) and summarises the
// ids it meets, a batch at a time, from their entries found through the
// lookup keys. A thread belongs to the walk's stretch of the journal when
// its last entry does: an id met below the cursor whose entries go on at or
// above it was listed by an earlier page and is skipped, found from its
// lookup keys without reading its entries. So pages that each resume where
// the last stopped list every thread once, in the order Threads does, and
// a page's cost follows the rows it walks (a budget bounds them) and the
// entries of the threads met, plus a pass over the lookup keys per batch,
// not the journal's length (BenchmarkThreadWalk).

// ThreadWalk is a walk of WalkThreads (or WalkConversations).
type ThreadWalk struct {
	// Before keeps the threads whose last entry's seq is below Before: the
	// cursor of a page that resumes where another stopped. 0 is the
	// journal's end.
	Before int64
	// Budget bounds how many journal rows the walk reads backwards before
	// it returns (at least one batch is read); 0 is no bound.
	Budget int
	// Want is how many summaries the caller expects to keep: the size of
	// the walk's first batch (it doubles while batches keep too few).
	Want int
	// Filter narrows the summaries as it narrows Threads; its Conversation
	// is not supported (ErrInvalid).
	Filter ThreadFilter
}

// Walk batch sizes, in ids: the first batch is ThreadWalk.Want (at least
// minWalkBatch), doubling up to maxWalkBatch.
const (
	minWalkBatch = 32
	maxWalkBatch = 4096
)

// WalkFunc is called by WalkThreads with a batch of summaries, most
// recently active first, each with its thread's (conversation's) committed
// entries in seq order, by id. Returning stop true ends the walk.
type WalkFunc func(sums []ThreadSummary, entries map[string][]Entry) (stop bool, err error)

// WalkThreads calls fn with the summaries of the journal's threads whose
// last entry's seq is below w.Before, most recently active first (as
// Threads orders them), a batch at a time, until fn stops it, the journal's
// start is reached or w.Budget rows were walked. It returns the cursor to
// resume from (the Before of the next walk: every thread whose last entry
// is at or above it was passed to fn or filtered out), 0 when the walk
// reached the journal's start. When fn stops the walk, the cursor of the
// next page is the LastSeq of the last summary the caller kept.
func (r *Reader) WalkThreads(w ThreadWalk, fn WalkFunc) (int64, error) {
	return r.walk(keyThread, w, fn)
}

// WalkConversations is WalkThreads for conversations, as Conversations
// summarises them.
func (r *Reader) WalkConversations(w ThreadWalk, fn WalkFunc) (int64, error) {
	return r.walk(keyConversation, w, fn)
}

// walk is WalkThreads and WalkConversations.
func (r *Reader) walk(kind byte, w ThreadWalk, fn WalkFunc) (int64, error) {
	if w.Filter.Conversation != "" {
		return 0, fmt.Errorf("%w: a thread walk does not filter by conversation", ErrInvalid)
	}
	if w.Before < 0 || w.Budget < 0 {
		return 0, fmt.Errorf("%w: thread walk before %d, budget %d", ErrInvalid, w.Before, w.Budget)
	}
	before := w.Before
	if before == 0 {
		before = 1 << 62
	}
	var next int64
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		ww := walker{ctx: ctx, tx: tx, kind: kind, before: before, at: before, f: w.Filter,
			prefix: strings.ToLower(w.Filter.IDPrefix), seen: map[string]bool{}}
		batch, walked := min(max(w.Want, minWalkBatch), maxWalkBatch), 0
		for {
			ids, rows, err := ww.nextIDs(batch)
			if err != nil {
				return err
			}
			walked += rows
			sums, entries, err := ww.summarise(ids)
			if err != nil {
				return err
			}
			if len(sums) > 0 {
				stop, err := fn(sums, entries)
				if err != nil || stop {
					return err
				}
			}
			switch {
			case ww.done:
				next = 0
				return nil
			case w.Budget > 0 && walked >= w.Budget:
				next = ww.at
				return nil
			}
			batch = min(batch*2, maxWalkBatch)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("store: walk threads: %w", err)
	}
	return next, nil
}

// walker is the state of one walk.
type walker struct {
	ctx    context.Context
	tx     *sql.Tx
	kind   byte
	before int64 // the walk's cursor: ids with entries at or above it are skipped
	at     int64 // the lowest seq walked so far (the next rows read are below it)
	done   bool  // the walk reached the journal's start
	f      ThreadFilter
	prefix string
	seen   map[string]bool
}

// column is the journal column of the walk's ids.
func (w *walker) column() string {
	if w.kind == keyConversation {
		return "conversation"
	}
	return "thread"
}

// nextIDs walks back from w.at until it meets n ids not met before (or
// the journal's start), and returns them in the order met and how many
// rows it read.
func (w *walker) nextIDs(n int) ([]string, int, error) {
	query := `SELECT seq, ` + w.column() + ` FROM journal_rows WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2`
	var (
		ids  []string
		read int
	)
	for len(ids) < n && !w.done {
		rows, err := w.tx.QueryContext(w.ctx, query, w.at, newestScanChunk)
		if err != nil {
			return nil, 0, fmt.Errorf("store: walk: %w", err)
		}
		chunk := 0
		for rows.Next() {
			var (
				seq int64
				id  string
			)
			if err := rows.Scan(&seq, &id); err != nil {
				rows.Close()
				return nil, 0, fmt.Errorf("store: walk: %w", err)
			}
			chunk++
			w.at = seq
			if (w.kind == keyConversation && id == "") || w.seen[id] {
				continue
			}
			w.seen[id] = true
			ids = append(ids, id)
			if len(ids) == n {
				break
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, fmt.Errorf("store: walk: %w", err)
		}
		read += chunk
		if chunk < newestScanChunk && len(ids) < n {
			w.done = true
		}
	}
	return ids, read, nil
}

// summarise reads the entries of ids and returns, in the order of ids,
// the summaries of those whose last entry is below w.before and that the
// filter keeps, with their entries.
func (w *walker) summarise(ids []string) ([]ThreadSummary, map[string][]Entry, error) {
	entries := map[string][]Entry{}
	if len(ids) == 0 {
		return nil, entries, nil
	}
	keyed, tail, err := keyedSeqs(w.ctx, w.tx, w.kind, ids)
	if err != nil {
		return nil, nil, err
	}
	below := ids
	if w.before < 1<<62 {
		above, err := idsAtOrAbove(w.ctx, w.tx, w.kind, ids, w.before, keyed, tail)
		if err != nil {
			return nil, nil, err
		}
		below = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return above[id] })
	}
	if len(below) == 0 {
		return nil, entries, nil
	}
	err = lookupManyBelow(w.ctx, w.tx, w.kind, below, w.before, keyed, tail, func(e *Entry) error {
		id := e.Thread
		if w.kind == keyConversation {
			id = e.Conversation
		}
		entries[id] = append(entries[id], *e)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var sums []ThreadSummary
	for _, id := range below {
		es := entries[id]
		if len(es) == 0 {
			continue
		}
		var (
			b              = summaryBuilder{s: ThreadSummary{ID: id}}
			person, tagged bool
		)
		for i := range es {
			b.add(&es[i])
			person = person || es[i].From == w.f.Participant || es[i].To == w.f.Participant
			tagged = tagged || es[i].PayloadTag == w.f.PayloadTag
		}
		s := b.summary()
		keep := (w.f.Participant == "" || person) && (w.f.PayloadTag == "" || tagged) &&
			(w.f.Since.IsZero() || !s.Last.Before(w.f.Since)) && (w.f.Until.IsZero() || s.First.Before(w.f.Until)) &&
			(w.prefix == "" || strings.HasPrefix(strings.ToLower(id), w.prefix))
		if !keep {
			delete(entries, id)
			continue
		}
		sums = append(sums, s)
	}
	return sums, entries, nil
}

// keyedSeqs reads the lookup keys of ids and returns the seqs of the
// summarised partitions each id's key names (a hash collision adds a seq
// of another id: read the row to tell), and the first seq the keys do not
// cover.
func keyedSeqs(ctx context.Context, tx *sql.Tx, kind byte, ids []string) (map[string][]int64, int64, error) {
	byKey := map[uint64][]string{}
	byBucket := map[int64][]uint64{}
	for _, id := range ids {
		k := lookupKey(kind, id)
		if len(byKey[k]) == 0 {
			b := keyBucket(k)
			byBucket[b] = append(byBucket[b], k)
		}
		byKey[k] = append(byKey[k], id)
	}
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
	out := map[string][]int64{}
	for rows.Next() {
		var (
			part, bucket int64
			keys         sql.RawBytes // read before the next row
		)
		if err := rows.Scan(&part, &bucket, &keys); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("store: lookup keys: %w", err)
		}
		for _, k := range byBucket[bucket] {
			if seqs := keySeqs(part, keys, k); len(seqs) > 0 {
				for _, id := range byKey[k] {
					out[id] = append(out[id], seqs...)
				}
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: lookup keys: %w", err)
	}
	return out, tail, nil
}

// idsAtOrAbove reports which of ids have a committed entry with seq at or
// above before. Each id's highest keyed seq at or above before is read to
// tell it from a hash collision (the next highest after a collision), and
// the rows the keys do not cover yet are scanned.
func idsAtOrAbove(ctx context.Context, tx *sql.Tx, kind byte, ids []string, before int64, keyed map[string][]int64,
	tail int64) (map[string]bool, error) {
	column := "thread"
	if kind == keyConversation {
		column = "conversation"
	}
	above := map[string]bool{}
	idList, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	err = eachRow(ctx, tx, `SELECT DISTINCT `+column+` FROM journal_rows WHERE seq >= max(?1, ?2)
		AND `+column+` IN (SELECT value FROM json_each(?3))`, []any{before, tail, string(idList)},
		func(rows *sql.Rows) error {
			var id string
			err := rows.Scan(&id)
			above[id] = true
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("store: walk: %w", err)
	}
	// Candidates: each id's keyed seqs at or above before, highest first.
	cands := map[string][]int64{}
	for id, seqs := range keyed {
		if above[id] {
			continue
		}
		var c []int64
		for _, s := range seqs {
			if s >= before {
				c = append(c, s)
			}
		}
		if len(c) > 0 {
			slices.Sort(c)
			cands[id] = c
		}
	}
	for len(cands) > 0 {
		probe := map[int64][]string{}
		var seqs []int64
		for id, c := range cands {
			s := c[len(c)-1]
			if len(probe[s]) == 0 {
				seqs = append(seqs, s)
			}
			probe[s] = append(probe[s], id)
			cands[id] = c[:len(c)-1]
		}
		seqList, err := json.Marshal(seqs)
		if err != nil {
			return nil, err
		}
		err = eachRow(ctx, tx, `SELECT seq, `+column+` FROM journal_rows WHERE seq IN (SELECT value FROM json_each(?1))`,
			[]any{string(seqList)}, func(rows *sql.Rows) error {
				var (
					seq int64
					id  string
				)
				if err := rows.Scan(&seq, &id); err != nil {
					return err
				}
				if slices.Contains(probe[seq], id) {
					above[id] = true
				}
				return nil
			})
		if err != nil {
			return nil, fmt.Errorf("store: walk: %w", err)
		}
		for id, c := range cands {
			if above[id] || len(c) == 0 {
				delete(cands, id)
			}
		}
	}
	return above, nil
}

// lookupManyBelow is lookupManyIn for the entries with seq below before,
// from the ids' keyed seqs and the keys' tail (keyedSeqs).
func lookupManyBelow(ctx context.Context, tx *sql.Tx, kind byte, ids []string, before int64, keyed map[string][]int64,
	tail int64, fn func(e *Entry) error) error {
	column := "thread"
	if kind == keyConversation {
		column = "conversation"
	}
	seqs := []int64{}
	for _, id := range ids {
		for _, s := range keyed[id] {
			if s < before {
				seqs = append(seqs, s)
			}
		}
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
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
		UNION ALL SELECT ` + entryColumns + ` FROM journal_entries WHERE seq >= ?3 AND seq < ?4
			AND ` + column + ` IN (SELECT value FROM json_each(?2)) ORDER BY seq`
	return eachEntry(ctx, tx, query, []any{string(seqList), string(idList), tail, before}, fn)
}
