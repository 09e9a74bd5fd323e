package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
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
// not the journal's length (BenchmarkThreadWalk, load 3.7: a cursor page of
// 16,384 rows that keeps one thread in 200 or none, 20-28 ms at 10,000
// rows, 60-71 ms at 100,000, 0.43-0.55 s at a million at load 6-10, where
// grouping takes 16, 172 ms and 11.5 s). A walk without a budget that keeps
// nothing walks the whole journal: 21 against 16 ms grouping at 10,000
// rows, 327 against 172 at 100,000, 9.6 against 11.5 s at a million.

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
	// the walk's first batch, in ids (the next ones grow).
	Want int
	// Filter narrows the summaries as it narrows Threads; its Conversation
	// is not supported (ErrInvalid).
	Filter ThreadFilter
}

// Walk batch sizes: the first batch is ThreadWalk.Want ids (at least
// minWalkBatch); each next one is the ids met in eight times the rows the
// last batch walked (at least minWalkRows), up to maxWalkRows rows. Each
// batch costs a pass over the lookup keys (16 bytes per journal row) and
// holds the metadata of its rows in memory, and the caller judges each of
// its ids: small batches first, so that a page a dense filter fills soon
// judges few threads, then growing ones, so that a walk over a million
// rows passes the keys ~20 times, in ~15 MB (with batches of at most 4096
// ids, a walk over a million rows that kept nothing took 67 s against 11.5
// s for the grouping, BenchmarkThreadWalk).
const (
	minWalkBatch = 32
	minWalkRows  = 256
	maxWalkRows  = 1 << 16
)

// WalkFunc is called by WalkThreads with a batch of summaries, most
// recently active first, each with its thread's (conversation's) committed
// entries in seq order, by id: each entry's metadata, and the envelope,
// digest and diagnostics of those that record a failure (a message's or
// a decision's Bytes are nil: read them with Thread). Returning stop true
// ends the walk.
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
			prefix: strings.ToLower(w.Filter.IDPrefix), seen: map[string]bool{}, pending: map[string][]walkRow{},
			routes: map[int64]walkRoute{}}
		// The first batch is the first Want ids met; each next one the ids
		// met in the next rowBatch rows (growing), within the budget.
		batch, rowBatch, walked := max(w.Want, minWalkBatch), 1<<62, 0
		for {
			rowsLeft := rowBatch
			if w.Budget > 0 {
				rowsLeft = min(rowsLeft, w.Budget-walked)
			}
			ids, rows, err := ww.nextIDs(batch, rowsLeft)
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
			batch = 1 << 62
			rowBatch = min(max(rows, minWalkRows)*8, maxWalkRows)
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
	// seen are the ids met; pending those of them not yet summarised,
	// with the rows walked of them (newest first).
	seen    map[string]bool
	pending map[string][]walkRow
	routes  map[int64]walkRoute
}

// walkRow is a journal row as the walk reads it: an entry without its
// envelope, diagnostics and digest, and the id of its route.
type walkRow struct {
	e     Entry
	route int64
}

// walkRoute is a route of journal_routes as an entry shows it.
type walkRoute struct {
	direction              Direction
	kind                   Kind
	from, to, listener     string
	root                   string
	profile                string
	profileUnknown, exists bool
}

// walkRowColumns are the columns of journal_rows a walkRow reads.
const walkRowColumns = `seq, time_ns, thread, conversation, route`

// scanWalkRow reads a row selected as walkRowColumns.
func scanWalkRow(rows *sql.Rows) (walkRow, error) {
	var (
		r  walkRow
		ns int64
	)
	err := rows.Scan(&r.e.Seq, &ns, &r.e.Thread, &r.e.Conversation, &r.route)
	r.e.Time = time.Unix(0, ns).UTC()
	return r, err
}

// column is the journal column of the walk's ids.
func (w *walker) column() string {
	if w.kind == keyConversation {
		return "conversation"
	}
	return "thread"
}

// idOf is the walk's id of entry e.
func (w *walker) idOf(e *Entry) string {
	if w.kind == keyConversation {
		return e.Conversation
	}
	return e.Thread
}

// nextIDs walks back from w.at until it meets n ids not met before, the
// journal's start, or has read maxRows rows (at least one), keeping the
// rows of the ids not yet summarised, and returns the new ids in the order
// met and how many rows it read.
func (w *walker) nextIDs(n, maxRows int) ([]string, int, error) {
	query := `SELECT ` + walkRowColumns + ` FROM journal_rows WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2`
	var (
		ids  []string
		read int
	)
	for len(ids) < n && !w.done && (read == 0 || read < maxRows) {
		rows, err := w.tx.QueryContext(w.ctx, query, w.at, min(newestScanChunk, max(maxRows-read, 1)))
		if err != nil {
			return nil, 0, fmt.Errorf("store: walk: %w", err)
		}
		chunk := 0
		for rows.Next() {
			r, err := scanWalkRow(rows)
			if err != nil {
				rows.Close()
				return nil, 0, fmt.Errorf("store: walk: %w", err)
			}
			chunk++
			w.at = r.e.Seq
			id := w.idOf(&r.e)
			if w.kind == keyConversation && id == "" {
				continue
			}
			if !w.seen[id] {
				w.seen[id] = true
				ids = append(ids, id)
				w.pending[id] = nil
			}
			if rs, ok := w.pending[id]; ok {
				w.pending[id] = append(rs, r)
			}
			if len(ids) == n {
				break
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, fmt.Errorf("store: walk: %w", err)
		}
		read += chunk
		if chunk < min(newestScanChunk, max(maxRows-(read-chunk), 1)) && len(ids) < n {
			w.done = true
		}
	}
	return ids, read, nil
}

// summarise returns, in the order of ids, the summaries of those of ids
// whose last entry is below w.before and that the filter keeps, with their
// entries: the rows walked of them, and those below the walk found
// through their lookup keys.
func (w *walker) summarise(ids []string) ([]ThreadSummary, map[string][]Entry, error) {
	entries := map[string][]Entry{}
	if len(ids) == 0 {
		return nil, entries, nil
	}
	walked := make(map[string][]walkRow, len(ids))
	for _, id := range ids {
		walked[id] = w.pending[id]
		delete(w.pending, id)
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
	// The rows below the walk: keyed ones, and the ones the keys do not
	// cover yet when the walk is still above their start.
	var seqs []int64
	for _, id := range below {
		for _, s := range keyed[id] {
			if s < w.at {
				seqs = append(seqs, s)
			}
		}
	}
	rest, err := w.rowsOf(below, seqs, tail)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rest {
		id := w.idOf(&r.e)
		walked[id] = append(walked[id], r)
	}
	var (
		sums     []ThreadSummary
		failures []int64
	)
	for _, id := range below {
		rs := walked[id]
		if len(rs) == 0 {
			continue
		}
		slices.SortFunc(rs, func(a, b walkRow) int { return cmpInt64(a.e.Seq, b.e.Seq) })
		if err := w.resolve(rs); err != nil {
			return nil, nil, err
		}
		var (
			b              = summaryBuilder{s: ThreadSummary{ID: id}}
			person, tagged bool
			es             = make([]Entry, len(rs))
		)
		for i := range rs {
			es[i] = rs[i].e
			b.add(&es[i])
			person = person || es[i].From == w.f.Participant || es[i].To == w.f.Participant
			tagged = tagged || es[i].PayloadTag == w.f.PayloadTag
		}
		s := b.summary()
		keep := (w.f.Participant == "" || person) && (w.f.PayloadTag == "" || tagged) &&
			(w.f.Since.IsZero() || !s.Last.Before(w.f.Since)) && (w.f.Until.IsZero() || s.First.Before(w.f.Until)) &&
			(w.prefix == "" || strings.HasPrefix(strings.ToLower(id), w.prefix))
		if !keep {
			continue
		}
		sums = append(sums, s)
		entries[id] = es
		for _, e := range es {
			if e.Kind != Message && e.Kind != Decision {
				failures = append(failures, e.Seq)
			}
		}
	}
	if err := w.readFailures(entries, failures); err != nil {
		return nil, nil, err
	}
	return sums, entries, nil
}

// cmpInt64 orders two seqs.
func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rowsOf reads the rows of ids below w.at: those at seqs (their keyed
// seqs, checked against the row's id) and, when the walk is still above
// tail, those from tail on that the keys do not cover.
func (w *walker) rowsOf(ids []string, seqs []int64, tail int64) ([]walkRow, error) {
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	seqList, err := json.Marshal(seqs)
	if err != nil {
		return nil, err
	}
	idList, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	column := w.column()
	query := `SELECT ` + walkRowColumns + ` FROM journal_rows WHERE seq IN (SELECT value FROM json_each(?1))
			AND ` + column + ` IN (SELECT value FROM json_each(?2))
		UNION ALL SELECT ` + walkRowColumns + ` FROM journal_rows WHERE seq >= ?3 AND seq < ?4
			AND ` + column + ` IN (SELECT value FROM json_each(?2))`
	var out []walkRow
	err = eachRow(w.ctx, w.tx, query, []any{string(seqList), string(idList), tail, w.at}, func(rows *sql.Rows) error {
		r, err := scanWalkRow(rows)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: walk: %w", err)
	}
	return out, nil
}

// resolve fills in the route of each of rs, reading the routes the walk
// has not met yet.
func (w *walker) resolve(rs []walkRow) error {
	var missing []int64
	for _, r := range rs {
		if _, ok := w.routes[r.route]; !ok && !slices.Contains(missing, r.route) {
			missing = append(missing, r.route)
		}
	}
	if len(missing) > 0 {
		list, err := json.Marshal(missing)
		if err != nil {
			return err
		}
		err = eachRow(w.ctx, w.tx, `SELECT ro.id, ro.direction, ro.kind, coalesce(s.name, ''), coalesce(t.name, ''),
				coalesce(l.name, ''), coalesce(o.name, ''), p.name
			FROM journal_routes AS ro
				LEFT JOIN journal_names AS s ON s.id = ro.sender
				LEFT JOIN journal_names AS t ON t.id = ro.recipient
				LEFT JOIN journal_names AS l ON l.id = ro.listener
				LEFT JOIN journal_names AS o ON o.id = ro.root
				LEFT JOIN journal_names AS p ON p.id = ro.profile
			WHERE ro.id IN (SELECT value FROM json_each(?1))`, []any{string(list)}, func(rows *sql.Rows) error {
			var (
				id        int64
				dir, kind string
				prof      sql.NullString
				rt        = walkRoute{exists: true}
			)
			if err := rows.Scan(&id, &dir, &kind, &rt.from, &rt.to, &rt.listener, &rt.root, &prof); err != nil {
				return err
			}
			rt.direction, _ = ParseDirection(dir)
			rt.kind, _ = ParseKind(kind)
			rt.profile, rt.profileUnknown = prof.String, !prof.Valid
			w.routes[id] = rt
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: walk: routes: %w", err)
		}
		for _, id := range missing {
			if _, ok := w.routes[id]; !ok {
				w.routes[id] = walkRoute{profileUnknown: true} // as the journal view shows a row without its route
			}
		}
	}
	for i := range rs {
		rt, e := w.routes[rs[i].route], &rs[i].e
		e.Direction, e.Kind, e.From, e.To, e.Listener = rt.direction, rt.kind, rt.from, rt.to, rt.listener
		e.PayloadTag, e.Profile, e.ProfileUnknown = rt.root, rt.profile, rt.profileUnknown
	}
	return nil
}

// readFailures fills in the envelope, digest and diagnostics of the
// entries at seqs (those that record a failure) among entries.
func (w *walker) readFailures(entries map[string][]Entry, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	at := map[int64]*Entry{}
	for id := range entries {
		for i := range entries[id] {
			at[entries[id][i].Seq] = &entries[id][i]
		}
	}
	list, err := json.Marshal(seqs)
	if err != nil {
		return err
	}
	err = eachRow(w.ctx, w.tx, `SELECT seq, sha256, envelope, coalesce(diagnostics, '') FROM journal_rows
		WHERE seq IN (SELECT value FROM json_each(?1))`, []any{string(list)}, func(rows *sql.Rows) error {
		var (
			seq   int64
			sum   []byte
			bytes []byte
			diags string
		)
		if err := rows.Scan(&seq, &sum, &bytes, &diags); err != nil {
			return err
		}
		if e := at[seq]; e != nil {
			copy(e.SHA256[:], sum)
			e.Bytes, e.Diagnostics = bytes, diags
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: walk: failures: %w", err)
	}
	return nil
}

// scanBucketKeys is how many of a walk's ids may share a bucket before
// keyedSeqs reads the bucket's records one by one rather than searching
// it for each id.
const scanBucketKeys = 8

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
	rows, tail, err := bucketKeys(ctx, tx, byBucket)
	if err != nil {
		return nil, 0, err
	}
	// A bucket many of the ids share is read record by record, each looked
	// up (a binary search per id would cost more than the bucket's ~32
	// records).
	byRecord := map[uint64][]string{}
	for k, ids := range byKey {
		if len(byBucket[keyBucket(k)]) > scanBucketKeys {
			byRecord[k>>keyOffBits] = append(byRecord[k>>keyOffBits], ids...)
		}
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
		if len(byBucket[bucket]) > scanBucketKeys {
			for i := 0; i+keyRecordSize <= len(keys); i += keyRecordSize {
				rec := binary.BigEndian.Uint64(keys[i:])
				for _, id := range byRecord[rec>>keyOffBits] {
					out[id] = append(out[id], part<<journalPartitionBits|int64(rec&(1<<keyOffBits-1)))
				}
			}
			continue
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
