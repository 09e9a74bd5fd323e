package librarian

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Refusals and failures.
var (
	ErrNotFound = errors.New("librarian: not found")
	ErrNotXML   = errors.New("librarian: content is not a well-formed XML document")
	ErrName     = errors.New("librarian: bad collection or document name")
)

// Backend is where documents live: the embedded SQLite store or eXist-db.
type Backend interface {
	Store(ctx context.Context, path, content string) error
	Get(ctx context.Context, path string) (string, error)
	Query(ctx context.Context, collection, query string) ([]Result, string, error)
	Search(ctx context.Context, collection, query string, n int) ([]Result, error)
}

// Embedded is the SQLite document store with full-text search (FTS5), in
// library.db of the data directory (or in memory).
type Embedded struct {
	db *sql.DB
}

// OpenEmbedded opens (creating) dir/library.db, or an in-memory store.
func OpenEmbedded(dir string) (*Embedded, error) {
	dsn := "file::memory:?_pragma=busy_timeout(5000)"
	if dir != "" {
		path := filepath.Join(dir, "library.db")
		if err := store.PrepareDatabaseFile(path, nil); err != nil { // the owner's alone: 0600
			return nil, fmt.Errorf("librarian: %w", err)
		}
		dsn = "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("librarian: %w", err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS docs (path TEXT PRIMARY KEY, collection TEXT NOT NULL, content TEXT NOT NULL, updated INTEGER NOT NULL)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(path UNINDEXED, body)`,
	} {
		if _, err := db.Exec(q); err != nil {
			return nil, errors.Join(fmt.Errorf("librarian: %w", err), db.Close())
		}
	}
	return &Embedded{db: db}, nil
}

// Close closes the database.
func (e *Embedded) Close() error { return e.db.Close() }

// Store stores (or replaces) a well-formed document and indexes its text.
func (e *Embedded) Store(ctx context.Context, p, content string) error {
	// string(/) is the document's text: never more bytes than the document.
	text, err := stage.EvalXPath(ctx, []byte(content), "string(/)", nil, len(content))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotXML, err)
	}
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO docs (path, collection, content, updated) VALUES (?, ?, ?, ?)
		ON CONFLICT (path) DO UPDATE SET content = excluded.content, updated = excluded.updated`,
		p, path.Dir(p), content, time.Now().UnixNano()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM docs_fts WHERE path = ?`, p); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO docs_fts (path, body) VALUES (?, ?)`, p, text.String); err != nil {
		return err
	}
	return tx.Commit()
}

// Get returns a document.
func (e *Embedded) Get(ctx context.Context, p string) (string, error) {
	var c string
	err := e.db.QueryRowContext(ctx, `SELECT content FROM docs WHERE path = ?`, p).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	return c, err
}

// inCollection is the SQL condition and argument for a collection and below.
func inCollection(collection string) (string, []any) {
	return `(collection = ? OR collection LIKE ? ESCAPE '\')`, []any{collection,
		strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(collection) + "/%"}
}

// maxQueryDocs bounds how many documents one XPath query visits.
const maxQueryDocs = 1000

// maxQueryBytes bounds the results of one XPath query over all its
// documents (the tool's max_bytes applies after): an answer carrying more
// would not fit a message, so evaluation stops past it.
const maxQueryBytes = stage.DefaultMaxBytes

// Query evaluates an XPath 1.0 expression on every document of the
// collection (and below); each non-empty result is one Result.
func (e *Embedded) Query(ctx context.Context, collection, query string) ([]Result, string, error) {
	cond, args := inCollection(collection)
	rows, err := e.db.QueryContext(ctx, `SELECT path, content FROM docs WHERE `+cond+` ORDER BY path LIMIT ?`,
		append(args, maxQueryDocs)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []Result
	used := 0
	tooLarge := fmt.Errorf("librarian: results over %d bytes; narrow the query", maxQueryBytes)
	for rows.Next() {
		var p, c string
		if err := rows.Scan(&p, &c); err != nil {
			return nil, "", err
		}
		if used >= maxQueryBytes {
			return nil, "", tooLarge
		}
		r, err := stage.EvalXPath(ctx, []byte(c), query, nil, maxQueryBytes-used)
		if errors.Is(err, stage.ErrResultTooLarge) {
			return nil, "", fmt.Errorf("%w: %w", tooLarge, err)
		}
		if err != nil {
			if errors.Is(err, stage.ErrXPath) {
				return nil, "", fmt.Errorf("librarian: %w", err)
			}
			continue
		}
		switch r.Type {
		case "nodeset":
			for _, n := range r.Nodes {
				v := n.Value
				if len(n.XML) > 0 {
					v = string(n.XML)
				}
				out = append(out, Result{Path: p, Snippet: v})
				used += len(p) + len(n.Name) + len(n.Namespace) + len(n.Value) + len(n.XML)
			}
		case "boolean":
			if r.Boolean {
				out = append(out, Result{Path: p, Snippet: "true"})
			}
		case "number":
			out = append(out, Result{Path: p, Snippet: fmt.Sprint(r.Number)})
		default:
			if r.String != "" {
				out = append(out, Result{Path: p, Snippet: r.String})
				used += len(p) + len(r.String)
			}
		}
	}
	return out, "", rows.Err()
}

// Search runs a full-text search (FTS5; the words are matched as terms, not
// as FTS5 syntax) and returns the best n documents with snippets.
func (e *Embedded) Search(ctx context.Context, collection, query string, n int) ([]Result, error) {
	var terms []string
	for _, w := range strings.Fields(query) {
		terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	if len(terms) == 0 {
		return nil, errors.New("librarian: empty search")
	}
	cond, args := inCollection(collection)
	q := `SELECT f.path, snippet(docs_fts, 1, '[', ']', '…', 12) FROM docs_fts f JOIN docs d ON d.path = f.path
		WHERE docs_fts MATCH ? AND ` + strings.ReplaceAll(cond, "collection", "d.collection") + ` ORDER BY rank LIMIT ?`
	rows, err := e.db.QueryContext(ctx, q, append(append([]any{strings.Join(terms, " ")}, args...), n)...)
	if err != nil {
		return nil, fmt.Errorf("librarian: search: %w", err)
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		var r Result
		if err := rows.Scan(&r.Path, &r.Snippet); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
