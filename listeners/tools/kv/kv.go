// Package kv is the key_value tool: get, set and delete in a SQLite table
// (tools.db in the organism's data directory, else in memory), namespaced
// per thread unless the caller names a namespace, with expiry honoured.
package kv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "key_value"

// Limits.
const (
	MaxKeyBytes     = 256
	DefaultMaxBytes = 64 << 10
)

// Refusals.
var (
	ErrKey      = errors.New("key_value: key must be 1 to 256 bytes")
	ErrTooLarge = errors.New("key_value: value over the size cap")
	ErrTTL      = errors.New("key_value: ttl must not be negative")
	ErrBadOp    = errors.New("key_value: unknown op")
	ErrReadOnly = errors.New("key_value: read-only (tool_config read_only)")
)

// Store is the key-value table.
type Store struct {
	db  *sql.DB
	now func() time.Time
}

// Open opens (creating) dir/tools.db, or an in-memory store when dir is "".
// now is the clock (nil: time.Now).
func Open(dir string, now func() time.Time) (*Store, error) {
	dsn := "file::memory:?_pragma=busy_timeout(5000)"
	if dir != "" {
		path := filepath.Join(dir, "tools.db")
		if err := store.PrepareDatabaseFile(path, nil); err != nil { // the owner's alone: 0600
			return nil, fmt.Errorf("key_value: %w", err)
		}
		dsn = "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("key_value: %w", err)
	}
	db.SetMaxOpenConns(1) // one connection: the in-memory database is per connection
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS kv (
		namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER,
		PRIMARY KEY (namespace, key))`); err != nil {
		return nil, errors.Join(fmt.Errorf("key_value: %w", err), db.Close())
	}
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Get returns the live value of key.
func (s *Store) Get(ctx context.Context, ns, key string) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`,
		ns, key, s.now().UnixNano()).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

// Set stores value under key; ttl > 0 makes it expire.
func (s *Store) Set(ctx context.Context, ns, key, value string, ttl time.Duration) error {
	now := s.now()
	var exp any
	if ttl > 0 {
		exp = now.Add(ttl).UnixNano()
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?`, now.UnixNano()); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`, ns, key, value, exp)
	return err
}

// Delete removes key and reports whether it had a live value.
func (s *Store) Delete(ctx context.Context, ns, key string) (bool, error) {
	_, found, err := s.Get(ctx, ns, key)
	if err != nil {
		return false, err
	}
	_, err = s.db.ExecContext(ctx, `DELETE FROM kv WHERE namespace = ? AND key = ?`, ns, key)
	return found, err
}

// Tool is the key_value listener.
type Tool struct {
	Store  *Store
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

// Handle runs the operation and answers the caller.
func (t *Tool) Handle(ctx context.Context, p *KeyValue, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &KeyValueResult{Op: p.Op, Key: p.Key}
	if err := t.run(ctx, c, p, md, res); err != nil {
		res.Error = err.Error()
	}
	return tools.Answer(t.Callers, md, res), nil
}

func (t *Tool) run(ctx context.Context, c tools.Config, p *KeyValue, md xmlpipe.Metadata, res *KeyValueResult) error {
	if len(p.Key) == 0 || len(p.Key) > MaxKeyBytes {
		return ErrKey
	}
	ns := p.Namespace
	if ns == "" {
		ns = "thread:" + md.ThreadID
	}
	switch p.Op {
	case "get":
		v, ok, err := t.Store.Get(ctx, ns, p.Key)
		if err != nil {
			return fmt.Errorf("key_value: %w", err)
		}
		res.Value, res.Found = v, ok
		return nil
	case "set":
		if c.ReadOnly {
			return ErrReadOnly
		}
		if max := tools.Or(c.MaxBytes, DefaultMaxBytes); len(p.Value) > max {
			return fmt.Errorf("%w: %d bytes (max: %d)", ErrTooLarge, len(p.Value), max)
		}
		if p.TTLSeconds < 0 {
			return ErrTTL
		}
		if err := t.Store.Set(ctx, ns, p.Key, p.Value, time.Duration(p.TTLSeconds)*time.Second); err != nil {
			return fmt.Errorf("key_value: %w", err)
		}
		return nil
	case "delete":
		if c.ReadOnly {
			return ErrReadOnly
		}
		found, err := t.Store.Delete(ctx, ns, p.Key)
		if err != nil {
			return fmt.Errorf("key_value: %w", err)
		}
		res.Found = found
		return nil
	}
	return fmt.Errorf("%w %q (want get, set or delete)", ErrBadOp, p.Op)
}
