package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// memorySchema holds the agents' consented memories (Agent OS
// "consented memory"): what an agent was allowed to remember for a user,
// who consented (the approval id, or the policy that needs none) and when.
// memory_fts indexes content and tags for recall (FTS5, diacritics folded);
// triggers keep it in step with the table. A memory is never changed, only
// deleted (DELETE /api/v1/memory/{id}).
//
//	SELECT id, user_id, agent, content FROM memory WHERE user_id = 'alice' ORDER BY created_at DESC;
const memorySchema = `
CREATE TABLE IF NOT EXISTS memory (
	n            INTEGER PRIMARY KEY,
	id           TEXT    NOT NULL UNIQUE CHECK (id <> ''),
	user_id      TEXT    NOT NULL DEFAULT '',
	agent        TEXT    NOT NULL CHECK (agent <> ''),
	content      TEXT    NOT NULL CHECK (content <> ''),
	tags         TEXT    NOT NULL DEFAULT '',
	consent      TEXT    NOT NULL CHECK (consent <> ''),
	conversation TEXT    NOT NULL DEFAULT '',
	thread       TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_user ON memory (user_id, created_at);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(content, tags, content = 'memory', content_rowid = 'n',
	tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS memory_fts_insert AFTER INSERT ON memory BEGIN
	INSERT INTO memory_fts (rowid, content, tags) VALUES (new.n, new.content, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memory_fts_delete AFTER DELETE ON memory BEGIN
	INSERT INTO memory_fts (memory_fts, rowid, content, tags) VALUES ('delete', old.n, old.content, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memory_immutable BEFORE UPDATE ON memory BEGIN
	SELECT RAISE(ABORT, 'memory rows are never changed, only deleted');
END;
`

// MemoryRow is one consented memory.
type MemoryRow struct {
	// ID names the memory (unique; chosen by the caller).
	ID string
	// User is whose memory it is: the user who began the conversation, ""
	// for the organism's own traffic (a space of its own).
	User string
	// Agent is the agent that asked to remember it.
	Agent string
	// Content is what is remembered; Tags are words to find it by.
	Content string
	Tags    []string
	// Consent records who allowed it: the id of the approval a human
	// decided, or the policy that needed none ("policy:always").
	Consent string
	// Conversation and Thread are where it was asked for.
	Conversation, Thread string
	// CreatedAt is when it was stored.
	CreatedAt time.Time
}

func (m *MemoryRow) validate() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: memory without id", ErrInvalid)
	case m.Agent == "":
		return fmt.Errorf("%w: memory %s without agent", ErrInvalid, m.ID)
	case strings.TrimSpace(m.Content) == "":
		return fmt.Errorf("%w: memory %s without content", ErrInvalid, m.ID)
	case m.Consent == "":
		return fmt.Errorf("%w: memory %s without consent", ErrInvalid, m.ID)
	case m.CreatedAt.IsZero():
		return fmt.Errorf("%w: memory %s without creation time", ErrInvalid, m.ID)
	}
	for _, t := range m.Tags {
		if strings.ContainsAny(t, "\n") {
			return fmt.Errorf("%w: memory %s: tag %q holds a line break", ErrInvalid, m.ID, t)
		}
	}
	return nil
}

// PutMemory stores m and waits for the commit.
func (s *Store) PutMemory(ctx context.Context, m MemoryRow) error {
	if err := m.validate(); err != nil {
		return err
	}
	_, err := s.do(ctx, "put memory", func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO memory (id, user_id, agent, content, tags, consent, conversation, thread, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, m.ID, m.User, m.Agent, m.Content, strings.Join(m.Tags, "\n"), m.Consent,
			m.Conversation, m.Thread, nanos(m.CreatedAt))
	})
	if err != nil {
		return fmt.Errorf("store: put memory %s: %w", m.ID, err)
	}
	return nil
}

// DeleteMemory deletes the memory id and waits for the commit; ErrNotFound
// when there is none.
func (s *Store) DeleteMemory(ctx context.Context, id string) error {
	n, err := s.do(ctx, "delete memory", func(w *writer) (int64, error) {
		return w.exec(`DELETE FROM memory WHERE id = ?`, id)
	})
	switch {
	case err != nil:
		return fmt.Errorf("store: delete memory %s: %w", id, err)
	case n == 0:
		return fmt.Errorf("%w: memory %s", ErrNotFound, id)
	}
	return nil
}

// MemoryQuery selects memories.
type MemoryQuery struct {
	// User selects one user's memories ("" is the organism's own space);
	// AnyUser selects every user's instead.
	User    string
	AnyUser bool
	// ID selects one memory.
	ID string
	// Text, when it holds words, returns the memories whose content or
	// tags hold any of them, best matches first (FTS5 bm25); otherwise the
	// newest come first.
	Text string
	// Limit caps the rows (0: all).
	Limit int
}

// maxMatchTerms bounds the words of a recall query.
const maxMatchTerms = 32

// matchExpr turns free text into an FTS5 query: each word (a run of
// letters and digits) quoted, joined with OR — so the text's punctuation and
// FTS5 operators are never syntax. "" when it holds no word.
func matchExpr(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) > maxMatchTerms {
		words = words[:maxMatchTerms]
	}
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	return strings.Join(words, " OR ")
}

// Memories returns the memories q selects.
func (s *Store) Memories(ctx context.Context, q MemoryQuery) ([]MemoryRow, error) {
	cols := `m.id, m.user_id, m.agent, m.content, m.tags, m.consent, m.conversation, m.thread, m.created_at`
	var (
		query string
		args  []any
	)
	expr := matchExpr(q.Text)
	if expr != "" {
		query = `SELECT ` + cols + ` FROM memory_fts JOIN memory m ON m.n = memory_fts.rowid WHERE memory_fts MATCH ?`
		args = append(args, expr)
	} else {
		query = `SELECT ` + cols + ` FROM memory m WHERE 1 = 1`
	}
	if !q.AnyUser {
		query += ` AND m.user_id = ?`
		args = append(args, q.User)
	}
	if q.ID != "" {
		query += ` AND m.id = ?`
		args = append(args, q.ID)
	}
	if expr != "" {
		query += ` ORDER BY bm25(memory_fts), m.n DESC`
	} else {
		query += ` ORDER BY m.created_at DESC, m.n DESC`
	}
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	return load(ctx, s, "read memories", query, args, func(rows *sql.Rows) (MemoryRow, error) {
		var (
			m       MemoryRow
			tags    string
			created int64
		)
		err := rows.Scan(&m.ID, &m.User, &m.Agent, &m.Content, &tags, &m.Consent, &m.Conversation, &m.Thread, &created)
		if tags != "" {
			m.Tags = strings.Split(tags, "\n")
		}
		m.CreatedAt = fromNanos(created)
		return m, err
	})
}
