package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// killedSchema records the conversations a kill ended for good: recovery
// delivers none of their journaled messages again, a continuation of one
// is refused, and their status stays "killed" across restarts. A row is
// never changed or deleted (retention keeps it: it is what makes the kill
// final).
const killedSchema = `
CREATE TABLE IF NOT EXISTS killed_conversations (
	conversation TEXT    PRIMARY KEY CHECK (conversation <> ''),
	killed_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS killed_conversations_immutable_update BEFORE UPDATE ON killed_conversations
BEGIN
	SELECT RAISE(ABORT, 'killed conversations are immutable');
END;
CREATE TRIGGER IF NOT EXISTS killed_conversations_immutable_delete BEFORE DELETE ON killed_conversations
BEGIN
	SELECT RAISE(ABORT, 'killed conversations are immutable');
END;
`

// Kill is the record of a killed conversation.
type Kill struct {
	// Conversation is the conversation's id (its root thread).
	Conversation string
	// At is when it was killed.
	At time.Time
}

// RecordKill records that conversation k.Conversation was killed and waits
// for the commit. Recording a conversation killed already keeps the first
// record and is no error.
func (s *Store) RecordKill(ctx context.Context, k Kill) error {
	if k.Conversation == "" {
		return fmt.Errorf("%w: kill without a conversation", ErrInvalid)
	}
	if k.At.IsZero() {
		k.At = s.opts.Clock()
	}
	_, err := s.do(ctx, "record kill", func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO killed_conversations (conversation, killed_at) VALUES (?, ?)
			ON CONFLICT (conversation) DO NOTHING`, k.Conversation, nanos(k.At))
	})
	if err != nil {
		return fmt.Errorf("store: record kill of %s: %w", k.Conversation, err)
	}
	s.anyKilled.Store(true)
	return nil
}

// Killed reports whether conversation conv was killed (RecordKill). Until
// the first kill of a store's life it answers without a query.
func (s *Store) Killed(conv string) (bool, error) {
	if !s.anyKilled.Load() {
		return false, nil
	}
	if err := s.readable(); err != nil {
		return false, err
	}
	return s.Reader.Killed(conv)
}

// KilledThread reports whether the conversation that thread belonged to —
// thread may be its id or any thread of it the journal holds an entry of —
// was killed, and returns that conversation ("" when it was not killed).
// Until the first kill of a store's life it answers without a query, and
// it reads the journal only for a thread that is not a killed
// conversation's id and that the journal may hold (MayHaveThread).
func (s *Store) KilledThread(thread string) (string, bool, error) {
	killed, err := s.Killed(thread)
	switch {
	case err != nil:
		return "", false, err
	case killed:
		return thread, true, nil
	case !s.anyKilled.Load() || !s.MayHaveThread(thread):
		return "", false, nil
	}
	es, err := s.Thread(thread)
	if err != nil {
		return "", false, fmt.Errorf("store: conversation of thread %s: %w", thread, err)
	}
	for _, e := range es {
		if e.Conversation == "" || e.Conversation == thread {
			continue
		}
		if killed, err = s.Killed(e.Conversation); err != nil || !killed {
			return "", false, err
		}
		return e.Conversation, true, nil
	}
	return "", false, nil
}

// Killed reports whether conversation conv was killed (Store.RecordKill):
// false for a database written before kills were recorded.
func (r *Reader) Killed(conv string) (bool, error) {
	k, err := r.KillOf(conv)
	return k != nil, err
}

// KillOf returns the kill record of conversation conv (nil when it was not
// killed).
func (r *Reader) KillOf(conv string) (*Kill, error) {
	if conv == "" {
		return nil, nil
	}
	var at int64
	err := r.read(func(db *sql.DB) error {
		return db.QueryRowContext(context.Background(),
			`SELECT killed_at FROM killed_conversations WHERE conversation = ?`, conv).Scan(&at)
	})
	switch {
	case errors.Is(err, sql.ErrNoRows), err != nil && strings.Contains(err.Error(), "no such table"):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: read kill of %s: %w", conv, err)
	}
	return &Kill{Conversation: conv, At: fromNanos(at)}, nil
}

// loadAnyKilled sets s.anyKilled when the store holds a kill record.
func (s *Store) loadAnyKilled(ctx context.Context) error {
	var n int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM killed_conversations)`).Scan(&n); err != nil {
		return fmt.Errorf("store: read killed conversations: %w", err)
	}
	s.anyKilled.Store(n > 0)
	return nil
}
