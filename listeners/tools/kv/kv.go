// Package kv is the key_value tool: get, set and delete in a SQLite table
// (tools.db in the organism's data directory, else in memory), with expiry
// honoured. Namespaces belong to their owner: the default namespace is the
// caller's conversation (xmlpipe.Metadata.Conversation: every call of it,
// each on a thread of its own, and its continuations), reachable from that
// conversation only (a namespace naming a conversation or a thread is
// refused); a named namespace is the calling user's own
// (xmlpipe.Metadata.User; the organism's own traffic has one of its own)
// unless tool_config declares it in shared_namespaces.
//
// A conversation's namespace (and a thread's) goes away as a whole
// conversation_ttl after its last set or delete (DefaultConversationTTL):
// at once for every call, and from tools.db at the next Sweep. Named
// namespaces are kept; their keys expire by their own TTL only.
package kv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	MaxKeyBytes       = 256
	MaxNamespaceBytes = 256
	DefaultMaxBytes   = 64 << 10
	// DefaultMaxKeys and DefaultMaxTotalBytes cap one namespace when
	// tool_config sets no max_keys or max_total_bytes.
	DefaultMaxKeys       = 10000
	DefaultMaxTotalBytes = 16 << 20
	// DefaultConversationTTL is how long a conversation's (or a thread's)
	// namespace is kept after its last set or delete when tool_config
	// sets no conversation_ttl.
	DefaultConversationTTL = 30 * 24 * time.Hour
)

// ConversationPrefix begins the stored name of a conversation's namespace,
// ThreadPrefix that of a thread's (a caller without a conversation: a Go
// program's direct call; or keys kept before namespaces were the
// conversation's). Callers can name neither.
const (
	ConversationPrefix = "conversation:"
	ThreadPrefix       = "thread:"
)

// Refusals.
var (
	ErrKey      = errors.New("key_value: key must be 1 to 256 bytes")
	ErrTooLarge = errors.New("key_value: value over the size cap")
	ErrTTL      = errors.New("key_value: ttl must not be negative")
	ErrBadOp    = errors.New("key_value: unknown op")
	ErrReadOnly = errors.New("key_value: read-only (tool_config read_only)")
	ErrThreadNS = errors.New("key_value: a conversation's namespace is reachable only from that conversation: leave <Namespace> empty for yours")
	ErrNS       = errors.New("key_value: namespace must be at most 256 bytes")
	ErrConfig   = errors.New("key_value")
	// ErrFull refuses a set that would take a namespace past max_keys or
	// max_total_bytes.
	ErrFull = errors.New("key_value: the namespace is full")
)

// Check is the load-time check of a key_value tool_config entry: every
// shared namespace is a name a caller could give.
func Check(c tools.Config) error {
	for _, ns := range c.SharedNamespaces {
		if ns == "" || len(ns) > MaxNamespaceBytes || private(ns) {
			return fmt.Errorf("%w: shared_namespaces: %q is not a namespace a caller can name (1 to %d bytes, not conversation:… or thread:…)",
				ErrConfig, ns, MaxNamespaceBytes)
		}
	}
	return nil
}

// Namespace is where a call's keys live, as stored: "conversation:<id>"
// for the caller's conversation ("thread:<id>", its thread, when it has
// none), "shared:<name>" for a shared namespace, and
// "user:<len>:<user>:<name>" for a user's own (the length makes the user
// and the name unambiguous; user "" is the organism's own traffic).
func Namespace(c tools.Config, name string, md xmlpipe.Metadata) (string, error) {
	switch {
	case name == "" && md.Conversation != "":
		return ConversationPrefix + md.Conversation, nil
	case name == "":
		return ThreadPrefix + md.ThreadID, nil
	case private(name):
		return "", ErrThreadNS
	case len(name) > MaxNamespaceBytes:
		return "", ErrNS
	case slices.Contains(c.SharedNamespaces, name):
		return "shared:" + name, nil
	}
	return "user:" + strconv.Itoa(len(md.User)) + ":" + md.User + ":" + name, nil
}

// private reports a namespace name only the pump's metadata gives: a
// conversation's or a thread's.
func private(name string) bool {
	return strings.HasPrefix(name, ConversationPrefix) || strings.HasPrefix(name, ThreadPrefix)
}

// Store is the key-value table, with the expiry of the namespaces that
// expire as a whole (kv_namespaces).
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
	if now == nil {
		now = time.Now
	}
	if err := migrate(db, now()); err != nil {
		return nil, errors.Join(fmt.Errorf("key_value: %w", err), db.Close())
	}
	return &Store{db: db, now: now}, nil
}

// schemaVersion is the table's layout: 1 stores namespaces as Namespace
// names them. Version 0 stored a named namespace as given, shared by every
// caller; migrate moves those rows into the organism's own space (their
// owner is not known), where no user reaches them. Version 2 adds
// kv_namespaces, when each conversation's or thread's namespace expires;
// the ones already stored expire DefaultConversationTTL after the
// migration (now).
const schemaVersion = 2

func migrate(db *sql.DB, now time.Time) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	var version int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version >= schemaVersion {
		return nil
	}
	var tables int
	if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'kv'`).Scan(&tables); err != nil {
		return err
	}
	const create = `CREATE TABLE kv (
		namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER,
		PRIMARY KEY (namespace, key))`
	switch {
	case tables == 0:
		if _, err := tx.Exec(create); err != nil {
			return err
		}
	case version == 0:
		for _, q := range []string{
			`ALTER TABLE kv RENAME TO kv_v0`,
			create,
			`INSERT INTO kv (namespace, key, value, expires_at) SELECT
				CASE WHEN substr(namespace, 1, 7) = 'thread:' THEN namespace ELSE 'user:0::' || namespace END,
				key, value, expires_at FROM kv_v0`,
			`DROP TABLE kv_v0`,
		} {
			if _, err := tx.Exec(q); err != nil {
				return err
			}
		}
	}
	for _, q := range []string{
		`CREATE TABLE kv_namespaces (namespace TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)`,
		`CREATE INDEX kv_namespaces_expiry ON kv_namespaces (expires_at)`,
		`CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL`,
	} {
		if _, err := tx.Exec(q); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`INSERT INTO kv_namespaces (namespace, expires_at) SELECT DISTINCT namespace, ? FROM kv
		WHERE substr(namespace, 1, ?) = ? OR substr(namespace, 1, ?) = ?`, now.Add(DefaultConversationTTL).UnixNano(),
		len(ConversationPrefix), ConversationPrefix, len(ThreadPrefix), ThreadPrefix); err != nil {
		return err
	}
	if _, err := tx.Exec(`PRAGMA user_version = ` + strconv.Itoa(schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Get returns the live value of key: none when the key or its namespace
// expired.
func (s *Store) Get(ctx context.Context, ns, key string) (string, bool, error) {
	var v string
	now := s.now().UnixNano()
	err := s.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE namespace = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)
		AND NOT EXISTS (SELECT 1 FROM kv_namespaces n WHERE n.namespace = ?1 AND n.expires_at <= ?3)`,
		ns, key, now).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

// Limits caps one namespace; a zero field caps nothing.
type Limits struct {
	// MaxKeys caps its live keys.
	MaxKeys int
	// MaxTotalBytes caps the bytes of its live keys and values together.
	MaxTotalBytes int
	// Idle makes the namespace expire as a whole this long after its last
	// set or delete (a conversation's or a thread's); 0 keeps it.
	Idle time.Duration
}

// Set stores value under key; ttl > 0 makes it expire. A set that would
// take the namespace past lim is refused (ErrFull), nothing stored;
// replacing a key's value counts the new value instead of the old, and is
// allowed in a namespace already past lim when it does not grow it. The
// check and the change are one transaction on the store's one connection,
// so concurrent sets cannot pass lim together.
func (s *Store) Set(ctx context.Context, ns, key, value string, ttl time.Duration, lim Limits) error {
	now := s.now()
	var exp any
	if ttl > 0 {
		exp = now.Add(ttl).UnixNano()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if _, err := dropExpired(ctx, tx, ns, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at <= ?`,
		ns, now.UnixNano()); err != nil {
		return err
	}
	var others, otherBytes, olds, oldBytes int
	if err := tx.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE key != ?1),
		coalesce(sum(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))) FILTER (WHERE key != ?1), 0),
		count(*) FILTER (WHERE key = ?1),
		coalesce(sum(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))) FILTER (WHERE key = ?1), 0)
		FROM kv WHERE namespace = ?2`, key, ns).Scan(&others, &otherBytes, &olds, &oldBytes); err != nil {
		return err
	}
	// A new key must fit under both caps; replacing a value must fit, or
	// at least not grow a namespace already past them (they were lowered).
	if lim.MaxKeys > 0 && olds == 0 && others+1 > lim.MaxKeys {
		return fmt.Errorf("%w: it holds %d keys (max_keys %d): delete one first", ErrFull, others, lim.MaxKeys)
	}
	if total := otherBytes + len(key) + len(value); lim.MaxTotalBytes > 0 && total > lim.MaxTotalBytes && total > otherBytes+oldBytes {
		return fmt.Errorf("%w: its keys and values would take %d bytes (max_total_bytes %d): delete or shorten one first",
			ErrFull, total, lim.MaxTotalBytes)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`, ns, key, value, exp); err != nil {
		return err
	}
	if lim.Idle > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kv_namespaces (namespace, expires_at) VALUES (?, ?)
			ON CONFLICT (namespace) DO UPDATE SET expires_at = excluded.expires_at`, ns, now.Add(lim.Idle).UnixNano()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Delete removes key and reports whether it had a live value. idle > 0
// keeps the namespace for that long again (a delete is a write).
func (s *Store) Delete(ctx context.Context, ns, key string, idle time.Duration) (bool, error) {
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if _, err := dropExpired(ctx, tx, ns, now); err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`,
		ns, key, now.UnixNano())
	if err != nil {
		return false, err
	}
	found, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE namespace = ? AND key = ?`, ns, key); err != nil {
		return false, err
	}
	if idle > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE kv_namespaces SET expires_at = ? WHERE namespace = ?`,
			now.Add(idle).UnixNano(), ns); err != nil {
			return false, err
		}
	}
	return found > 0, tx.Commit()
}

// dropExpired deletes namespace ns, keys and all, when it expired by now
// and no sweep took it yet, so that a write begins it anew instead of
// bringing its old keys back. It reports whether it did.
func dropExpired(ctx context.Context, tx *sql.Tx, ns string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM kv_namespaces WHERE namespace = ? AND expires_at <= ?`, ns, now.UnixNano())
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM kv WHERE namespace = ?`, ns)
	return err == nil, err
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
	ns, err := Namespace(c, p.Namespace, md)
	if err != nil {
		return err
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
		lim := Limits{MaxKeys: tools.Or(c.MaxKeys, DefaultMaxKeys), MaxTotalBytes: tools.Or(c.MaxTotalBytes, DefaultMaxTotalBytes),
			Idle: idle(c, ns)}
		err := t.Store.Set(ctx, ns, p.Key, p.Value, time.Duration(p.TTLSeconds)*time.Second, lim)
		if errors.Is(err, ErrFull) {
			return err
		}
		if err != nil {
			return fmt.Errorf("key_value: %w", err)
		}
		return nil
	case "delete":
		if c.ReadOnly {
			return ErrReadOnly
		}
		found, err := t.Store.Delete(ctx, ns, p.Key, idle(c, ns))
		if err != nil {
			return fmt.Errorf("key_value: %w", err)
		}
		res.Found = found
		return nil
	}
	return fmt.Errorf("%w %q (want get, set or delete)", ErrBadOp, p.Op)
}

// idle is how long namespace ns is kept after a write under c: the
// conversation_ttl (else DefaultConversationTTL) for a conversation's or a
// thread's, 0 (for ever) for a named one.
func idle(c tools.Config, ns string) time.Duration {
	if !private(ns) {
		return 0
	}
	if c.ConversationTTL > 0 {
		return c.ConversationTTL
	}
	return DefaultConversationTTL
}
