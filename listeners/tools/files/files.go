// Package files is the files tool: read, write, list and delete inside the
// configured roots only. An empty roots list allows nothing; every access
// goes through os.Root, so neither ".." nor a symlink leaves a root.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "files"

// Defaults.
const (
	DefaultMaxBytes = 256 << 10
	MaxEntries      = 1000
)

// Refusals.
var (
	ErrNoRoots    = errors.New("files: no roots configured (tool_config.files.allowed_paths); nothing is allowed")
	ErrOutside    = errors.New("files: path is outside the allowed roots")
	ErrReadOnly   = errors.New("files: read-only (tool_config read_only)")
	ErrTooLarge   = errors.New("files: over the size cap")
	ErrNotText    = errors.New("files: not UTF-8 text")
	ErrRootItself = errors.New("files: refusing to delete a root")
	ErrBadOp      = errors.New("files: unknown op")
)

// Tool is the files listener.
type Tool struct {
	// Policy gives the roots and limits for a caller.
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

// Handle runs the operation and answers the caller; refusals and failures
// are the result's Error.
func (t *Tool) Handle(_ context.Context, p *Files, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &FilesResult{Op: p.Op, Path: p.Path}
	if err := run(c, p, res); err != nil {
		res.Error = err.Error()
	}
	return tools.Answer(t.Callers, md, res), nil
}

// locate finds the root holding path and the path relative to it.
func locate(roots []string, path string) (root, rel string, err error) {
	if len(roots) == 0 {
		return "", "", ErrNoRoots
	}
	if !filepath.IsAbs(path) {
		return roots[0], filepath.Clean(path), checkRel(filepath.Clean(path))
	}
	path = filepath.Clean(path)
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(abs, path); err == nil && checkRel(rel) == nil {
			return abs, rel, nil
		}
	}
	return "", "", ErrOutside
}

func checkRel(rel string) error {
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ErrOutside
	}
	return nil
}

func run(c tools.Config, p *Files, res *FilesResult) error {
	rootDir, rel, err := locate(c.AllowedPaths, p.Path)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return fmt.Errorf("files: root %s: %w", rootDir, err)
	}
	defer root.Close()
	maxBytes := tools.Or(c.MaxBytes, DefaultMaxBytes)
	switch p.Op {
	case "read":
		return read(root, rel, maxBytes, res)
	case "write":
		if c.ReadOnly {
			return ErrReadOnly
		}
		return write(root, rel, p, maxBytes, res)
	case "list":
		return list(root, rel, p.Recursive, res)
	case "delete":
		if c.ReadOnly {
			return ErrReadOnly
		}
		if rel == "." {
			return ErrRootItself
		}
		if p.Recursive {
			return clean(root.RemoveAll(rel))
		}
		return clean(root.Remove(rel))
	}
	return fmt.Errorf("%w %q (want read, write, list or delete)", ErrBadOp, p.Op)
}

// clean strips the host path from an os.Root error, which would otherwise
// tell the caller where the root lives.
func clean(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("files: %s %s: %w", pe.Op, filepath.Base(pe.Path), pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("files: %s: %w", le.Op, le.Err)
	}
	return err
}

func read(root *os.Root, rel string, maxBytes int, res *FilesResult) error {
	f, err := root.Open(rel)
	if err != nil {
		return clean(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return clean(err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("files: %s is not a regular file", rel)
	}
	if st.Size() > int64(maxBytes) {
		return fmt.Errorf("%w: %d bytes (max: %d)", ErrTooLarge, st.Size(), maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err != nil {
		return clean(err)
	}
	if len(b) > maxBytes {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	if !tools.IsText(b) {
		return ErrNotText
	}
	res.Content, res.Size = string(b), int64(len(b))
	return nil
}

func write(root *os.Root, rel string, p *Files, maxBytes int, res *FilesResult) error {
	if len(p.Content) > maxBytes {
		return fmt.Errorf("%w: content is %d bytes (max: %d)", ErrTooLarge, len(p.Content), maxBytes)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if p.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := root.OpenFile(rel, flags, 0o644)
	if err != nil {
		return clean(err)
	}
	n, err := f.WriteString(p.Content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return clean(err)
	}
	res.BytesWritten = n
	return nil
}

func list(root *os.Root, rel string, recursive bool, res *FilesResult) error {
	st, err := root.Stat(rel)
	if err != nil {
		return clean(err)
	}
	if !st.IsDir() {
		return fmt.Errorf("files: %s is not a directory", rel)
	}
	err = fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == filepath.ToSlash(rel) {
			return nil
		}
		if len(res.Entries) >= MaxEntries {
			res.Truncated = true
			return fs.SkipAll
		}
		name := path
		if rel != "." {
			name = strings.TrimPrefix(path, filepath.ToSlash(rel)+"/")
		}
		e := Entry{Name: name, Type: "other"}
		switch {
		case d.IsDir():
			e.Type = "dir"
		case d.Type().IsRegular():
			e.Type = "file"
			if info, err := d.Info(); err == nil {
				e.Size = info.Size()
			}
		}
		res.Entries = append(res.Entries, e)
		if d.IsDir() && !recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return clean(err)
	}
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Name < res.Entries[j].Name })
	return nil
}
