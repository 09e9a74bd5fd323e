package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// Reader reads the journal of a data directory. Every Store has one (its
// read methods are the Reader's); OpenReadOnly returns a standalone one that
// takes no directory lock, so tools can read a store an organism holds. Its
// methods are safe for concurrent use.
type Reader struct {
	dir string
	db  *sql.DB

	// mu guards closed; reads hold it shared for their whole query, so
	// Close waits for them instead of closing the pool under them.
	mu     sync.RWMutex
	closed bool

	// lookupRows counts the rows thread and conversation lookups returned
	// (LookupRows).
	lookupRows atomic.Int64
	// callsEstimatedCol is set once llm_calls is seen to have its
	// usage_estimated column (callsEstimated).
	callsEstimatedCol atomic.Bool
}

// newReader opens the read-only connection pool of the database at path
// with conns connections.
func newReader(dir, path string, busy, conns int) (*Reader, error) {
	uri := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(" +
		strconv.Itoa(busy) + ")&_pragma=query_only(1)"
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("store: open %s read-only: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.PingContext(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s read-only: %w", path, err)
	}
	return &Reader{dir: dir, db: db}, nil
}

// OpenReadOnly opens the store in dir for reading only: no directory lock is
// taken and no migration runs, so it works while an organism holds the store
// (SQLite's WAL lets readers run beside the one writer; each read sees the
// entries committed when it starts). It fails with ErrNoDatabase when dir
// holds no store, ErrSchemaTooNew when a newer xmlpipe wrote the database,
// ErrUnreleasedLayout when a development build wrote it in a layout that
// is not migrated, and ErrSchemaOutdated when the database still needs a
// migration (opening it with Open applies it).
func OpenReadOnly(dir string) (*Reader, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: data directory %q: %w", dir, err)
	}
	path := filepath.Join(abs, DatabaseFileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoDatabase, path)
		}
		return nil, fmt.Errorf("store: %w", err)
	}
	r, err := newReader(abs, path, int(DefaultBusyTimeout.Milliseconds()), DefaultReadConns)
	if err != nil {
		return nil, err
	}
	if err := r.checkSchema(); err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return r, nil
}

// checkSchema requires the database to be of the layout this binary
// writes.
func (r *Reader) checkSchema() error {
	version, legacy, err := readLayout(context.Background(), r.db)
	if err != nil {
		return err
	}
	if err := layoutError(r.dir, version, legacy); err != nil {
		return err
	}
	switch {
	case legacy > 0:
		return fmt.Errorf("%w: the journal is in the legacy segment layout", ErrSchemaOutdated)
	case version == 0:
		return fmt.Errorf("%w: %s holds no store layout", ErrNoDatabase, filepath.Join(r.dir, DatabaseFileName))
	case version < layoutVersion:
		return fmt.Errorf("%w: database layout %d, this binary reads layout %d", ErrSchemaOutdated, version, layoutVersion)
	}
	return nil
}

// Dir returns the absolute data directory.
func (r *Reader) Dir() string { return r.dir }

// read runs fn with the pool, holding the reader open meanwhile; after Close
// it returns ErrClosed.
func (r *Reader) read(fn func(db *sql.DB) error) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	return fn(r.db)
}

// Close waits for running reads and closes the connection pool. A second
// Close returns ErrClosed. A Store's Reader is closed by Store.Close.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	if err := r.db.Close(); err != nil {
		return fmt.Errorf("store: close read pool: %w", err)
	}
	return nil
}
