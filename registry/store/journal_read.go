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
	listener, payload_tag, sha256, bytes, diagnostics`

// scanEntry reads one journal row. Unknown direction or kind names (only
// possible in a tampered database) load as the zero value; Verify reports
// them.
func scanEntry(rows *sql.Rows) (Entry, error) {
	var (
		e         Entry
		ns        int64
		dir, kind string
		sum       []byte
	)
	if err := rows.Scan(&e.Seq, &ns, &e.Thread, &e.Conversation, &dir, &kind, &e.From, &e.To,
		&e.Listener, &e.PayloadTag, &sum, &e.Bytes, &e.Diagnostics); err != nil {
		return Entry{}, fmt.Errorf("store: scan journal row: %w", err)
	}
	e.Time = time.Unix(0, ns).UTC()
	e.Direction, _ = ParseDirection(dir)
	e.Kind, _ = ParseKind(kind)
	copy(e.SHA256[:], sum)
	return e, nil
}

// queryEntries runs a journal query on the read pool.
func (s *Store) queryEntries(query string, args ...any) ([]Entry, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(context.Background(), query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query journal: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: query journal: %w", err)
	}
	return out, nil
}

// Tail returns the last n committed entries in ascending seq order.
func (s *Store) Tail(n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := s.queryEntries(`SELECT `+entryColumns+` FROM journal ORDER BY seq DESC LIMIT ?`, n)
	slices.Reverse(out)
	return out, err
}

// After returns up to limit committed entries with seq greater than seq, in
// ascending order; limit <= 0 means no limit.
func (s *Store) After(seq int64, limit int) ([]Entry, error) {
	if limit <= 0 {
		limit = -1
	}
	return s.queryEntries(`SELECT `+entryColumns+` FROM journal WHERE seq > ? ORDER BY seq LIMIT ?`, seq, limit)
}

// Thread returns the committed entries of one thread in seq order.
func (s *Store) Thread(id string) ([]Entry, error) {
	return s.queryEntries(`SELECT `+entryColumns+` FROM journal WHERE thread = ? ORDER BY seq`, id)
}

// Conversation returns the committed entries of one conversation in seq
// order.
func (s *Store) Conversation(id string) ([]Entry, error) {
	return s.queryEntries(`SELECT `+entryColumns+` FROM journal WHERE conversation = ? ORDER BY seq`, id)
}

// Count returns the number of journal rows (pruned rows excluded).
func (s *Store) Count() (int64, error) {
	return s.queryInt(`SELECT count(*) FROM journal`)
}

// LastSeq returns the highest committed sequence number ever assigned, even
// if that row has since been pruned; 0 for an empty journal.
func (s *Store) LastSeq() (int64, error) {
	return s.queryInt(`SELECT high_seq FROM journal_state WHERE id = 1`)
}

// queryInt runs a one-integer query on the read pool.
func (s *Store) queryInt(query string, args ...any) (int64, error) {
	if err := s.readable(); err != nil {
		return 0, err
	}
	var n int64
	if err := s.rdb.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: %s: %w", query, err)
	}
	return n, nil
}

// ThreadFilter narrows Threads. Zero fields do not filter.
type ThreadFilter struct {
	// Conversation keeps threads of this conversation.
	Conversation string
	// Participant keeps threads with a message from or to this name.
	Participant string
	// PayloadTag keeps threads with a message of this payload tag.
	PayloadTag string
	// Since keeps threads whose last message is at or after Since.
	Since time.Time
	// Until keeps threads whose first message is before Until.
	Until time.Time
}

// ThreadSummary describes one thread of the journal.
type ThreadSummary struct {
	// ID is the thread id.
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
func (s *Store) Threads(limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
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
	query := `SELECT t.thread, j.conversation, t.first_ns, t.last_ns, t.n, j.from_name, j.to_name, t.tags
		FROM (SELECT thread, min(time_ns) AS first_ns, max(time_ns) AS last_ns, count(*) AS n,
			max(seq) AS last_seq, group_concat(DISTINCT payload_tag) AS tags
			FROM journal`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " GROUP BY thread"
	if len(having) > 0 {
		query += " HAVING " + strings.Join(having, " AND ")
	}
	query += `) AS t JOIN journal AS j ON j.seq = t.last_seq ORDER BY t.last_seq DESC LIMIT ? OFFSET ?`
	args = append(args, limit, offset)

	rows, err := s.rdb.QueryContext(context.Background(), query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query threads: %w", err)
	}
	defer rows.Close()
	var out []ThreadSummary
	for rows.Next() {
		var (
			ts          ThreadSummary
			first, last int64
			tags        sql.NullString
		)
		if err := rows.Scan(&ts.ID, &ts.Conversation, &first, &last, &ts.Messages, &ts.LastFrom, &ts.LastTo, &tags); err != nil {
			return nil, fmt.Errorf("store: scan thread summary: %w", err)
		}
		ts.First = time.Unix(0, first).UTC()
		ts.Last = time.Unix(0, last).UTC()
		for tag := range strings.SplitSeq(tags.String, ",") {
			if tag != "" {
				ts.PayloadTags = append(ts.PayloadTags, tag)
			}
		}
		slices.Sort(ts.PayloadTags)
		out = append(out, ts)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: query threads: %w", err)
	}
	return out, nil
}

// Undelivered returns, in seq order, the committed Message entries that
// reached a listener (Listener set) and have no delivery mark: after a
// restart these are the messages whose handling may not have finished.
func (s *Store) Undelivered() ([]Entry, error) {
	return s.queryEntries(`SELECT ` + entryColumns + ` FROM journal AS j WHERE kind = 'message' AND listener <> ''
		AND NOT EXISTS (SELECT 1 FROM journal_deliveries AS d WHERE d.seq = j.seq) ORDER BY seq`)
}
