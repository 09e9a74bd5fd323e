package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// entryColumns are the journal columns scanEntry reads, in order.
const entryColumns = `seq, time_ns, thread, conversation, direction, kind, from_name, to_name,
	listener, payload_tag, sha256, bytes, diagnostics, coalesce(pack, 0)`

// scanEntry reads one journal row and the key of the pack holding its
// bytes (0 when they are inline; packReader.scanEntries reads them).
// Unknown direction or kind names (only possible in a tampered database)
// load as the zero value; Verify reports them.
func scanEntry(rows *sql.Rows) (Entry, int64, error) {
	var (
		e         Entry
		ns, pack  int64
		dir, kind string
		sum       []byte
	)
	if err := rows.Scan(&e.Seq, &ns, &e.Thread, &e.Conversation, &dir, &kind, &e.From, &e.To,
		&e.Listener, &e.PayloadTag, &sum, &e.Bytes, &e.Diagnostics, &pack); err != nil {
		return Entry{}, 0, fmt.Errorf("store: scan journal row: %w", err)
	}
	e.Time = time.Unix(0, ns).UTC()
	e.Direction, _ = ParseDirection(dir)
	e.Kind, _ = ParseKind(kind)
	copy(e.SHA256[:], sum)
	return e, pack, nil
}

// queryEntries runs a journal query on the read pool, in one read
// transaction with the packs it reads the bytes from.
func (r *Reader) queryEntries(query string, args ...any) ([]Entry, error) {
	var out []Entry
	err := r.read(func(db *sql.DB) error {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("store: query journal: %w", err)
		}
		defer tx.Rollback() //nolint:errcheck // read-only
		var packs packReader
		rows, err := tx.QueryContext(ctx, query, args...)
		out, err = packs.scanEntries(ctx, tx, rows, err)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Tail returns the last n committed entries in ascending seq order.
func (r *Reader) Tail(n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := r.queryEntries(`SELECT `+entryColumns+` FROM journal ORDER BY seq DESC LIMIT ?`, n)
	slices.Reverse(out)
	return out, err
}

// After returns up to limit committed entries with seq greater than seq, in
// ascending order; limit <= 0 means no limit.
func (r *Reader) After(seq int64, limit int) ([]Entry, error) {
	if limit <= 0 {
		limit = -1
	}
	return r.queryEntries(`SELECT `+entryColumns+` FROM journal WHERE seq > ? ORDER BY seq LIMIT ?`, seq, limit)
}

// Thread returns the committed entries of one thread in seq order.
func (r *Reader) Thread(id string) ([]Entry, error) {
	return r.lookup("thread", keyThread, id)
}

// Conversation returns the committed entries of one conversation in seq
// order.
func (r *Reader) Conversation(id string) ([]Entry, error) {
	return r.lookup("conversation", keyConversation, id)
}

// ThreadEnds returns, for every thread of the journal (dead letters without a
// thread under ""), the seq of its last committed entry, in one pass over the
// journal. Reading the journal in seq order with After and closing each
// thread at its last seq exports every thread without a lookup per thread.
func (r *Reader) ThreadEnds() (map[string]int64, error) {
	out := map[string]int64{}
	err := r.read(func(db *sql.DB) error {
		rows, err := db.QueryContext(context.Background(), `SELECT thread, max(seq) FROM journal GROUP BY thread`)
		if err != nil {
			return fmt.Errorf("store: thread ends: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id   string
				last int64
			)
			if err := rows.Scan(&id, &last); err != nil {
				return fmt.Errorf("store: thread ends: %w", err)
			}
			out[id] = last
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: thread ends: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Count returns the number of journal rows (pruned rows excluded).
func (r *Reader) Count() (int64, error) {
	return r.queryInt(`SELECT count(*) FROM journal`)
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

// summaries groups the journal by column group ("thread" or
// "conversation"), for Threads and Conversations.
func (r *Reader) summaries(group string, limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	if limit <= 0 {
		limit = -1
	}
	if offset < 0 {
		offset = 0
	}
	var (
		where, having []string
		args          []any
	)
	if filter.Conversation != "" {
		where = append(where, "conversation = ?")
		args = append(args, filter.Conversation)
	}
	if group == "conversation" {
		where = append(where, "conversation <> ''")
	}
	if filter.IDPrefix != "" {
		where = append(where, "lower(substr("+group+", 1, ?)) = lower(?)")
		args = append(args, len(filter.IDPrefix), filter.IDPrefix)
	}
	if filter.Participant != "" {
		having = append(having, "sum(from_name = ? OR to_name = ?) > 0")
		args = append(args, filter.Participant, filter.Participant)
	}
	if filter.PayloadTag != "" {
		having = append(having, "sum(payload_tag = ?) > 0")
		args = append(args, filter.PayloadTag)
	}
	if !filter.Since.IsZero() {
		having = append(having, "max(time_ns) >= ?")
		args = append(args, filter.Since.UnixNano())
	}
	if !filter.Until.IsZero() {
		having = append(having, "min(time_ns) < ?")
		args = append(args, filter.Until.UnixNano())
	}
	query := `SELECT t.id, j.conversation, t.first_ns, t.last_ns, t.n, j.from_name, j.to_name, t.tags
		FROM (SELECT ` + group + ` AS id, min(time_ns) AS first_ns, max(time_ns) AS last_ns, count(*) AS n,
			max(seq) AS last_seq, group_concat(DISTINCT payload_tag) AS tags
			FROM journal`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " GROUP BY " + group
	if len(having) > 0 {
		query += " HAVING " + strings.Join(having, " AND ")
	}
	query += `) AS t JOIN journal AS j ON j.seq = t.last_seq ORDER BY t.last_seq DESC LIMIT ? OFFSET ?`
	args = append(args, limit, offset)

	var out []ThreadSummary
	err := r.read(func(db *sql.DB) error {
		rows, err := db.QueryContext(context.Background(), query, args...)
		if err != nil {
			return fmt.Errorf("store: summarise %ss: %w", group, err)
		}
		defer rows.Close()
		for rows.Next() {
			ts, err := scanThreadSummary(rows)
			if err != nil {
				return err
			}
			out = append(out, ts)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: summarise %ss: %w", group, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanThreadSummary reads one row of the Threads query.
func scanThreadSummary(rows *sql.Rows) (ThreadSummary, error) {
	var (
		ts          ThreadSummary
		first, last int64
		tags        sql.NullString
	)
	if err := rows.Scan(&ts.ID, &ts.Conversation, &first, &last, &ts.Messages, &ts.LastFrom, &ts.LastTo, &tags); err != nil {
		return ThreadSummary{}, fmt.Errorf("store: scan thread summary: %w", err)
	}
	ts.First = time.Unix(0, first).UTC()
	ts.Last = time.Unix(0, last).UTC()
	for tag := range strings.SplitSeq(tags.String, ",") {
		if tag != "" {
			ts.PayloadTags = append(ts.PayloadTags, tag)
		}
	}
	slices.Sort(ts.PayloadTags)
	return ts, nil
}

// Undelivered returns, in seq order, the committed Message entries that
// reached a listener (Listener set) and have no delivery mark: after a
// restart these are the messages whose handling may not have finished.
func (r *Reader) Undelivered() ([]Entry, error) {
	return r.queryEntries(`SELECT ` + entryColumns + ` FROM journal AS j WHERE ` + undeliveredWhere + ` ORDER BY seq`)
}
