package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// readTx runs fn in one read transaction of the read pool, so everything
// it reads comes from one snapshot.
func (r *Reader) readTx(fn func(ctx context.Context, tx *sql.Tx) error) error {
	return r.read(func(db *sql.DB) error {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("store: read journal: %w", err)
		}
		defer tx.Rollback() //nolint:errcheck // read-only
		return fn(ctx, tx)
	})
}

// scanEntry reads one journal row selected as entryColumns. A direction or
// kind the store does not know is kept as the invalid zero value, for
// Verify to report.
func scanEntry(rows *sql.Rows) (Entry, error) {
	var (
		e         Entry
		ns        int64
		dir, kind string
		sum       []byte
		profile   sql.NullString
	)
	if err := rows.Scan(&e.Seq, &ns, &e.Thread, &e.Conversation, &dir, &kind, &e.From, &e.To, &e.Listener,
		&e.PayloadTag, &sum, &e.Bytes, &e.Diagnostics, &profile); err != nil {
		return Entry{}, err
	}
	e.Profile, e.ProfileUnknown = profile.String, !profile.Valid
	e.Time = time.Unix(0, ns).UTC()
	e.Direction, _ = ParseDirection(dir)
	e.Kind, _ = ParseKind(kind)
	copy(e.SHA256[:], sum)
	return e, nil
}

// eachEntry calls fn for every row of a query over entryColumns; an error
// of fn is returned as it is.
func eachEntry(ctx context.Context, q queryer, query string, args []any, fn func(e *Entry) error) error {
	fromFn := false
	err := eachRow(ctx, q, query, args, func(rows *sql.Rows) error {
		e, err := scanEntry(rows)
		if err != nil {
			return err
		}
		err = fn(&e)
		fromFn = err != nil
		return err
	})
	if err != nil && !fromFn {
		return fmt.Errorf("store: read journal: %w", err)
	}
	return err
}

// entries returns the rows of a query over entryColumns.
func (r *Reader) entries(query string, args ...any) ([]Entry, error) {
	var out []Entry
	err := r.read(func(db *sql.DB) error {
		return eachEntry(context.Background(), db, query, args, func(e *Entry) error {
			out = append(out, *e)
			return nil
		})
	})
	return out, err
}

// Tail returns the last n committed entries in ascending seq order.
func (r *Reader) Tail(n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := r.entries(`SELECT `+entryColumns+` FROM journal_entries ORDER BY seq DESC LIMIT ?`, n)
	slices.Reverse(out)
	return out, err
}

// After returns up to limit committed entries with seq greater than seq, in
// ascending order; limit <= 0 means no limit.
func (r *Reader) After(seq int64, limit int) ([]Entry, error) {
	if limit <= 0 {
		limit = -1
	}
	return r.entries(`SELECT `+entryColumns+` FROM journal_entries WHERE seq > ? ORDER BY seq LIMIT ?`, seq, limit)
}

// Each calls fn, in seq order, for every committed entry with seq above
// after, from one snapshot, reading the journal as it goes. An error from
// fn ends the scan and is returned.
func (r *Reader) Each(after int64, fn func(e *Entry) error) error {
	return r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return eachEntry(ctx, tx, `SELECT `+entryColumns+` FROM journal_entries WHERE seq > ? ORDER BY seq`, []any{after}, fn)
	})
}

// Thread returns the committed entries of one thread in seq order.
func (r *Reader) Thread(id string) ([]Entry, error) {
	return r.lookup(keyThread, id, 0, 0)
}

// Conversation returns the committed entries of one conversation in seq
// order.
func (r *Reader) Conversation(id string) ([]Entry, error) {
	return r.lookup(keyConversation, id, 0, 0)
}

// ThreadAfter returns, in seq order, up to limit (<= 0: no limit) committed
// entries of thread id with seq above after. The bound is part of the
// read: polling ThreadAfter(id, last) reads only the entries committed
// since last, however long the thread.
func (r *Reader) ThreadAfter(id string, after int64, limit int) ([]Entry, error) {
	return r.lookup(keyThread, id, after, limit)
}

// ConversationAfter is ThreadAfter for the entries of conversation id.
func (r *Reader) ConversationAfter(id string, after int64, limit int) ([]Entry, error) {
	return r.lookup(keyConversation, id, after, limit)
}

// LookupRows counts the journal rows that thread and conversation reads
// (Thread, Conversation, ThreadAfter, ConversationAfter) have returned
// since the reader opened: what following a conversation costs.
func (r *Reader) LookupRows() int64 { return r.lookupRows.Load() }

// ThreadEnds returns, for every thread of the journal (dead letters without a
// thread under ""), the seq of its last committed entry, in one pass over the
// journal. Reading the journal in seq order with After and closing each
// thread at its last seq exports every thread without a lookup per thread.
func (r *Reader) ThreadEnds() (map[string]int64, error) {
	out := map[string]int64{}
	err := r.read(func(db *sql.DB) error {
		return eachRow(context.Background(), db, `SELECT thread, max(seq) FROM journal_rows GROUP BY thread`, nil,
			func(rows *sql.Rows) error {
				var (
					thread string
					seq    int64
				)
				err := rows.Scan(&thread, &seq)
				out[thread] = seq
				return err
			})
	})
	if err != nil {
		return nil, fmt.Errorf("store: thread ends: %w", err)
	}
	return out, nil
}

// Count returns the number of journal entries (pruned entries excluded).
func (r *Reader) Count() (int64, error) {
	return r.queryInt(`SELECT count(*) FROM journal_rows`)
}

// LastSeq returns the highest committed sequence number ever assigned, even
// if that row has since been pruned; 0 for an empty journal.
func (r *Reader) LastSeq() (int64, error) {
	return r.queryInt(`SELECT high_seq FROM journal_state WHERE id = 1`)
}

// queryInt runs a one-integer query on the read pool.
func (r *Reader) queryInt(query string, args ...any) (int64, error) {
	var n int64
	err := r.read(func(db *sql.DB) error {
		if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
			return fmt.Errorf("store: %s: %w", query, err)
		}
		return nil
	})
	return n, err
}

// ThreadFilter narrows Threads and Conversations. Zero fields do not filter.
type ThreadFilter struct {
	// Conversation keeps threads of this conversation.
	Conversation string
	// IDPrefix keeps the threads (Conversations: the conversations) whose id
	// starts with this prefix, compared case-insensitively.
	IDPrefix string
	// Participant keeps threads with a message from or to this name.
	Participant string
	// PayloadTag keeps threads with a message of this payload tag.
	PayloadTag string
	// Since keeps threads whose last message is at or after Since.
	Since time.Time
	// Until keeps threads whose first message is before Until.
	Until time.Time
}

// ThreadSummary describes one thread (or, from Conversations, one
// conversation) of the journal.
type ThreadSummary struct {
	// ID is the thread id (the conversation id).
	ID string
	// Conversation is the conversation of the thread's last message.
	Conversation string
	// First and Last are the times of the thread's first and last message.
	First, Last time.Time
	// Messages is the number of journaled messages in the thread.
	Messages int64
	// LastFrom and LastTo are the sender and addressee of the last message.
	LastFrom, LastTo string
	// PayloadTags are the distinct payload tags seen, sorted.
	PayloadTags []string
	// LastSeq is the seq of the last entry: where the thread stands in the
	// order of Threads, and the cursor of a walk (WalkThreads) that resumes
	// after it.
	LastSeq int64
	// Failures is the number of entries that record a failure (a <huh>, a
	// SystemError, a dead letter, a refusal): an inbound message refused
	// before any handler ran is one, whatever its root tag. A governance
	// decision (an approval granted, a memory deleted) is not.
	Failures int64
}

// Threads summarises journal threads, most recently active first, skipping
// offset threads and returning at most limit (limit <= 0: no limit).
func (r *Reader) Threads(limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	return r.summaries("thread", limit, offset, filter)
}

// Conversations summarises journal conversations like Threads summarises
// threads: each summary's ID is a conversation id and its counts cover every
// thread of the conversation. Entries without a conversation (dead letters
// of unreadable input) are left out.
func (r *Reader) Conversations(limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	return r.summaries("conversation", limit, offset, filter)
}

// summaries groups the journal by the column key (thread or
// conversation) for Threads and Conversations, in one pass over the
// journal; a page without a filter reads only its ids (thread_page.go).
func (r *Reader) summaries(key string, limit, offset int, f ThreadFilter) ([]ThreadSummary, error) {
	if limit > 0 && f.unset() {
		return r.newestSummaries(key, limit, offset)
	}
	where := "TRUE"
	if key == "conversation" {
		where += " AND conversation <> ''"
	}
	if f.Conversation != "" {
		where += " AND conversation = :conv"
	}
	if f.IDPrefix != "" {
		where += " AND lower(substr(" + key + ", 1, length(:prefix))) = :prefix"
	}
	var since, until int64
	if !f.Since.IsZero() {
		since = f.Since.UnixNano()
	}
	if !f.Until.IsZero() {
		until = f.Until.UnixNano()
	}
	if limit <= 0 {
		limit = -1
	}
	query := `SELECT g.id, l.conversation, g.first_ns, g.last_ns, g.n, l.sender, l.recipient, coalesce(g.tags, ''),
			g.failures, g.last
		FROM (SELECT ` + key + ` AS id, min(time_ns) AS first_ns, max(time_ns) AS last_ns, count(*) AS n,
			max(seq) AS last, group_concat(DISTINCT nullif(root, '')) AS tags,
			sum(kind NOT IN ('` + Message.String() + `', '` + Decision.String() + `')) AS failures,
			max(sender = :person OR recipient = :person) AS person, max(root = :tag) AS tagged
			FROM journal_entries WHERE ` + where + ` GROUP BY ` + key + `) AS g
		JOIN journal_entries AS l ON l.seq = g.last
		WHERE (:person = '' OR g.person) AND (:tag = '' OR g.tagged)
			AND (:since = 0 OR g.last_ns >= :since) AND (:until = 0 OR g.first_ns < :until)
		ORDER BY g.last DESC LIMIT :limit OFFSET :offset`
	args := []any{sql.Named("conv", f.Conversation), sql.Named("prefix", strings.ToLower(f.IDPrefix)),
		sql.Named("person", f.Participant), sql.Named("tag", f.PayloadTag), sql.Named("since", since),
		sql.Named("until", until), sql.Named("limit", limit), sql.Named("offset", max(offset, 0))}
	var out []ThreadSummary
	err := r.read(func(db *sql.DB) error {
		var err error
		out, err = scanRows(context.Background(), db, query, args, func(rows *sql.Rows) (ThreadSummary, error) {
			var (
				s           ThreadSummary
				first, last int64
				tags        string
			)
			err := rows.Scan(&s.ID, &s.Conversation, &first, &last, &s.Messages, &s.LastFrom, &s.LastTo, &tags, &s.Failures,
				&s.LastSeq)
			s.First, s.Last = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
			if tags != "" {
				s.PayloadTags = strings.Split(tags, ",") // XML names hold no comma
				slices.Sort(s.PayloadTags)
			}
			return s, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: summarise: %w", err)
	}
	return out, nil
}

// undelivered selects, from ?1 on, the journal rows Undelivered reports: the
// messages that reached a listener, above the delivery watermark, without a
// delivery mark (deliveries.go).
var undelivered = `FROM journal_entries WHERE seq > max(?1, ` + watermarkExpr + `)
	AND kind = 'message' AND listener <> '' AND NOT ` + markedExpr + ` ORDER BY seq`

// Undelivered returns, in seq order, the committed Message entries that
// reached a listener (Listener set) and have no delivery mark: after a
// restart these are the messages whose handling may not have finished.
func (r *Reader) Undelivered() ([]Entry, error) {
	return r.entries(`SELECT `+entryColumns+` `+undelivered+` LIMIT -1`, 0)
}

// UndeliveredAfter returns, in seq order, up to limit (> 0) of the entries
// Undelivered reports whose seq is above after, so that a restart
// re-delivers any backlog a page at a time in bounded memory.
func (r *Reader) UndeliveredAfter(after int64, limit int) ([]Entry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: undelivered page limit %d", ErrInvalid, limit)
	}
	return r.entries(`SELECT `+entryColumns+` `+undelivered+` LIMIT ?2`, after, limit)
}
