// Package librarian is the librarian tool: store, get, query and search XML
// documents — in eXist-db over its REST protocol when tool_config gives a
// URL, else in an embedded SQLite document store with full-text search
// (FTS5), where query evaluates XPath 1.0 on the collection's documents.
package librarian

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "librarian"

// Defaults.
const (
	DefaultCollection = "/db/agents"
	DefaultMaxBytes   = 256 << 10
)

// Tool is the librarian listener.
type Tool struct {
	// Embedded is the store used when the caller's configuration names no URL.
	Embedded Backend
	Policy   tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

// Handle runs the operation and answers the caller.
func (t *Tool) Handle(ctx context.Context, p *Librarian, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &LibrarianResult{Op: p.Op}
	if err := t.run(ctx, c, p, res); err != nil {
		res.Error = err.Error()
	}
	return tools.Answer(t.Callers, md, res), nil
}

// collectionPath normalises a collection: absolute, cleaned, no "..";
// a relative one goes under the default collection (as the reference).
func collectionPath(c string) (string, error) {
	c = strings.TrimSpace(c)
	if c == "" {
		return DefaultCollection, nil
	}
	for _, seg := range strings.Split(c, "/") {
		if seg == ".." || seg == "." {
			return "", fmt.Errorf("%w: %q", ErrName, c)
		}
	}
	if !strings.HasPrefix(c, "/") {
		c = DefaultCollection + "/" + c
	}
	return path.Clean(c), nil
}

func (t *Tool) run(ctx context.Context, c tools.Config, p *Librarian, res *LibrarianResult) error {
	backend := t.Embedded
	if c.URL != "" {
		backend = &Exist{URL: c.URL, Username: c.Username, Password: c.Password}
	}
	maxBytes := tools.Or(c.MaxBytes, DefaultMaxBytes)
	switch p.Op {
	case "store":
		col, err := collectionPath(p.Collection)
		if err != nil {
			return err
		}
		if p.Name == "" {
			return fmt.Errorf("%w: store needs Name (the document's name; Path is get's)", ErrName)
		}
		if strings.ContainsAny(p.Name, "/\\") || p.Name == "." || p.Name == ".." {
			return fmt.Errorf("%w: document name %q", ErrName, p.Name)
		}
		if len(p.Content) > maxBytes {
			return fmt.Errorf("librarian: content is %d bytes (max: %d)", len(p.Content), maxBytes)
		}
		res.Path = col + "/" + p.Name
		return backend.Store(ctx, res.Path, p.Content)
	case "get":
		if p.Path == "" {
			return fmt.Errorf("%w: get needs Path (collection/name)", ErrName)
		}
		col, err := collectionPath(path.Dir(p.Path))
		if err != nil || p.Path == "" {
			return fmt.Errorf("%w: path %q", ErrName, p.Path)
		}
		res.Path = col + "/" + path.Base(p.Path)
		content, err := backend.Get(ctx, res.Path)
		if err != nil {
			return err
		}
		if len(content) > maxBytes {
			return fmt.Errorf("librarian: document is %d bytes (max: %d)", len(content), maxBytes)
		}
		res.Content = tools.Text([]byte(content))
		return nil
	case "query":
		col, err := collectionPath(p.Collection)
		if err != nil {
			return err
		}
		results, raw, err := backend.Query(ctx, col, p.Query)
		if err != nil {
			return err
		}
		return fill(res, results, raw, maxBytes, fmt.Sprintf("nothing matches %q in %s", p.Query, col))
	case "search":
		col, err := collectionPath(p.Collection)
		if err != nil {
			return err
		}
		n := min(max(tools.Or(p.NumResults, 10), 1), 100)
		results, err := backend.Search(ctx, col, p.Query, n)
		if err != nil {
			return err
		}
		return fill(res, results, "", maxBytes, fmt.Sprintf("no documents match %q in %s", p.Query, col))
	}
	return fmt.Errorf("librarian: unknown op %q (want store, get, query or search)", p.Op)
}

// fill puts results and raw into res; when both are empty, Content says
// none (a result with only its Op read as an echo of the request).
func fill(res *LibrarianResult, results []Result, raw string, maxBytes int, none string) error {
	size := len(raw)
	for _, r := range results {
		size += len(r.Path) + len(r.Snippet)
		if size > maxBytes {
			return fmt.Errorf("librarian: results over %d bytes; narrow the query", maxBytes)
		}
		res.Results = append(res.Results, Result{Path: r.Path, Snippet: tools.Text([]byte(r.Snippet))})
	}
	res.Content = tools.Text([]byte(raw))
	if len(res.Results) == 0 && strings.TrimSpace(raw) == "" {
		res.Content = none
	}
	return nil
}
