// Package files is the files tool: read, write, list and delete inside the
// configured roots only. An empty roots list allows nothing; every access
// goes through os.Root, so neither ".." nor a symlink leaves a root. A path
// names a root by its first segment (tools.Locate); errors show the path
// as the caller names it, never a host path; only regular files are read
// or written, so a FIFO or a device can never block a call, and not one
// with more than one hard link (which may be a file outside every root).
// What a writable root holds is capped (max_disk_bytes, counted as package
// diskquota counts): a write past it is refused, a delete never is.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "files"

// Defaults.
const (
	DefaultMaxBytes = 256 << 10
	MaxEntries      = 1000
)

// MaxCarried bounds the content a read answers, counted as the answer
// carries it (tools.CarriedSize: escaped): it keeps the answer under the
// pump's default message size cap (stage.DefaultMaxBytes), so text within
// max_bytes but full of characters XML or JSON escape gets a clear refusal
// rather than an answer the pump rejects.
const MaxCarried = stage.DefaultMaxBytes - 64<<10

// Refusals.
var (
	ErrNoRoots    = fmt.Errorf("files: %w", tools.ErrNoRoots)
	ErrOutside    = fmt.Errorf("files: %w", tools.ErrOutside)
	ErrReadOnly   = errors.New("files: read-only (tool_config read_only)")
	ErrTooLarge   = errors.New("files: over the size cap")
	ErrNotText    = errors.New("files: not UTF-8 text")
	ErrRootItself = errors.New("files: refusing to delete a root")
	ErrBadOp      = errors.New("files: unknown op")
	ErrNotRegular = errors.New("files: not a regular file")
	ErrNoRoot     = errors.New("files: root unavailable")
	// ErrHardLinked refuses a regular file with more than one hard link:
	// the other may be someone else's, for a file outside every root.
	ErrHardLinked = errors.New("files: the file has more than one hard link")
	// ErrDiskQuota refuses a write that would take a root past its
	// max_disk_bytes.
	ErrDiskQuota = errors.New("files: over the disk quota")
)

// Tool is the files listener.
type Tool struct {
	// Policy gives the roots and limits for a caller.
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
	// seen are the roots this listener has written to: its first write
	// to each counts the root afresh (see ledger).
	seen seenRoots
}

// Close ends the caps the listener declared on the directories it wrote
// to (see diskquota.Cap): it writes there no more. The organism calls it
// at shutdown.
func (t *Tool) Close() error {
	t.seen.release()
	return nil
}

// Check is the load-time check of a files tool_config entry: its roots
// exist, are directories, have distinct names and stay clear of the data
// directory.
func Check(c tools.Config) error {
	if len(c.AllowedPaths) == 0 {
		return nil // nothing allowed: nothing to check
	}
	return tools.CheckRoots(c.AllowedPaths, c.DataDir)
}

// Handle runs the operation and answers the caller; refusals and failures
// are the result's Error.
func (t *Tool) Handle(_ context.Context, p *Files, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &FilesResult{Op: p.Op, Path: p.Path}
	if err := t.run(c, md.From, p, res); err != nil {
		res.Error = err.Error()
	}
	return tools.Answer(t.Callers, md, res), nil
}

// op is one operation on one path: the open root, the path inside it
// and the name errors show.
type op struct {
	root *os.Root
	rel  string
	// shown is the path as the caller sees it (root name + rel).
	shown string
}

func (t *Tool) run(c tools.Config, caller string, p *Files, res *FilesResult) error {
	roots, err := tools.Roots(c.AllowedPaths)
	if errors.Is(err, tools.ErrNoRoots) {
		return ErrNoRoots
	}
	if err != nil {
		return fmt.Errorf("%w: allowed_paths is misconfigured", ErrNoRoot) // details are the operator's (load time)
	}
	r, rel, err := tools.Locate(roots, p.Path)
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	if tools.CheckOutsideData(r.Dir, c.DataDir) != nil {
		return fmt.Errorf("%w: %s overlaps the organism's data directory", ErrNoRoot, r.Name)
	}
	root, err := os.OpenRoot(r.Dir)
	if err != nil {
		return fmt.Errorf("%w: %s (%w)", ErrNoRoot, r.Name, bare(err))
	}
	defer root.Close()
	k := op{root: root, rel: rel, shown: r.Display(rel)}
	maxBytes := tools.Or(c.MaxBytes, DefaultMaxBytes)
	switch p.Op {
	case "read":
		return k.read(maxBytes, res)
	case "list":
		return k.list(p.Recursive, res)
	case "write", "delete":
		if c.ReadOnly {
			return ErrReadOnly
		}
		if p.Op == "delete" && rel == "." {
			return ErrRootItself
		}
		q, done, err := openQuota(root, r.Dir, r.Name, caller, int64(tools.Or(c.MaxDiskBytes, DefaultMaxDiskBytes)), t.Policy,
			&t.seen, p.Op == "write")
		if err != nil {
			return fmt.Errorf("files: counting %s for its disk quota: %w", r.Name, bare(err))
		}
		defer done()
		if p.Op == "write" {
			return k.write(p, maxBytes, q, res)
		}
		return k.delete(p.Recursive, q)
	}
	return fmt.Errorf("%w %q (want read, write, list or delete)", ErrBadOp, p.Op)
}

// bare is the reason inside a path error, without the path (which would
// tell the caller where a root lives).
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// fail reports a failed op on the call's path, as the caller names it.
func (k op) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("files: %s %s: %w", op, k.shown, bare(err))
}

// read returns a regular file's text. The file is stat'ed through the root
// before it is opened, and opened non-blocking, so a FIFO, a socket or a
// device is refused at once instead of holding the call (and a handler
// slot) until someone feeds it.
func (k op) read(maxBytes int, res *FilesResult) error {
	st, err := k.root.Stat(k.rel)
	if err != nil {
		return k.fail("read", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s", ErrNotRegular, k.shown)
	}
	f, err := k.root.OpenFile(k.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return k.fail("read", err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return k.fail("read", err)
	}
	if !st.Mode().IsRegular() { // replaced between the stat and the open
		return fmt.Errorf("%w: %s", ErrNotRegular, k.shown)
	}
	if tools.HardLinked(st) {
		return fmt.Errorf("%w: %s", ErrHardLinked, k.shown)
	}
	if st.Size() > int64(maxBytes) {
		return fmt.Errorf("%w: %d bytes (max: %d)", ErrTooLarge, st.Size(), maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err != nil {
		return k.fail("read", err)
	}
	if len(b) > maxBytes {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	if !tools.IsText(b) {
		return ErrNotText
	}
	if n := tools.CarriedSize(string(b)); n > MaxCarried {
		return fmt.Errorf("%w: %s is %d bytes, %d as an answer carries it (escaped; max: %d)",
			ErrTooLarge, k.shown, len(b), n, MaxCarried)
	}
	res.Content, res.Size = string(b), int64(len(b))
	return nil
}

// write creates or replaces (or appends to) a regular file; an existing
// path that is anything else is refused before it is opened, and the open
// is non-blocking as a second guard. A write that would take the root past
// its disk quota q is refused before anything is changed; q (locked by the
// caller) records what the write grew the root by.
func (k op) write(p *Files, maxBytes int, q *quota, res *FilesResult) error {
	if len(p.Content) > maxBytes {
		return fmt.Errorf("%w: content is %d bytes (max: %d)", ErrTooLarge, len(p.Content), maxBytes)
	}
	if st, err := k.root.Stat(k.rel); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s", ErrNotRegular, k.shown)
	}
	old, created, err := k.measure(p, q)
	if err != nil {
		return err
	}
	parent := k.parentBytes()
	if fi, err := k.root.Lstat(k.rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		parent = -1 // a new name is made where the link leads: the root is counted afresh
	}
	// What the root grew by is measured once the file is closed: what the
	// file counts then against before (a new name counts too). If it
	// cannot be, the next write counts the root afresh.
	defer func() {
		st, err := k.root.Stat(k.rel)
		switch {
		case err == nil && st.Mode().IsRegular() && !tools.HardLinked(st):
			n := diskquota.Content(st) - old.counted
			if created {
				n += diskquota.EntryBytes
				k.parentGrew(q, parent)
			}
			q.add(n)
		case errors.Is(err, fs.ErrNotExist) && created: // nothing made
		default:
			q.recount()
		}
	}()
	// Truncation waits until the file opened is known to be one that may
	// be changed: a hard link to a file outside is refused untouched.
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_NONBLOCK
	if p.Append {
		flags |= os.O_APPEND
	}
	f, err := k.root.OpenFile(k.rel, flags, 0o644)
	if err != nil {
		return k.fail("write", err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = fmt.Errorf("%w: %s", ErrNotRegular, k.shown)
	case tools.HardLinked(st):
		err = fmt.Errorf("%w: %s", ErrHardLinked, k.shown)
	case !p.Append:
		err = f.Truncate(0)
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, ErrNotRegular) || errors.Is(err, ErrHardLinked) {
			return err
		}
		return k.fail("write", err)
	}
	n, err := k.writeWithin(f, p, maxBytes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	if err != nil {
		return k.fail("write", err)
	}
	res.BytesWritten = n
	return nil
}

// measure is what the write p starts from (see before), once the quota q
// allows it: measured again when q counted the root afresh to decide. The
// write grows the root by what the file will count (diskquota.Content: its
// size in whole blocks) past what it counts now, and a new name.
func (k op) measure(p *Files, q *quota) (old was, created bool, err error) {
	for {
		old, created, err = before(k.root, k.rel)
		if err != nil {
			return was{}, false, k.fail("write", err)
		}
		size := int64(len(p.Content))
		if p.Append {
			size += old.size
		}
		grow := diskquota.RoundUp(size) - old.counted
		if p.Append {
			grow = max(grow, 0) // appending frees nothing
		}
		if created {
			grow += diskquota.EntryBytes
		}
		if err = q.allow(k.shown, grow); !errors.Is(err, errRecounted) {
			return old, created, err
		}
	}
}

// delete removes the call's path (a whole tree when recursive) and records
// what that freed in q, locked by the caller: a file's or a link's own
// bytes (a file's content with its last name), a tree's as counted just
// before it goes. What a failed removal left is unknown: the next write
// counts the root afresh.
func (k op) delete(recursive bool, q *quota) error {
	fi, err := k.root.Lstat(k.rel)
	if err != nil {
		return k.fail("delete", err)
	}
	parent := k.parentBytes()
	if !recursive || !fi.IsDir() {
		if err := k.root.Remove(k.rel); err != nil {
			return k.fail("delete", err)
		}
		q.removed(fi)
		k.parentGrew(q, parent)
		return nil
	}
	tree, terr := diskquota.CountTree(k.root, k.rel)
	err = k.root.RemoveAll(k.rel)
	switch {
	case err == nil && terr == nil:
		q.removedTree(tree)
		k.parentGrew(q, parent)
	default:
		q.recount()
	}
	return k.fail("delete", err)
}

// appendMu makes an append's size check and its write one step, so that
// concurrent appends to a file cannot together pass max_bytes.
var appendMu sync.Mutex

// writeWithin writes p's content to f, opened for the write. An append
// is refused (ErrTooLarge, nothing written) when the file would pass
// maxBytes: every append alone fits, so only the result's size stops a
// file growing past what read returns, or until the disk is full.
func (k op) writeWithin(f *os.File, p *Files, maxBytes int) (int, error) {
	if !p.Append {
		return f.WriteString(p.Content)
	}
	appendMu.Lock()
	defer appendMu.Unlock()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if size := st.Size() + int64(len(p.Content)); size > int64(maxBytes) {
		return 0, fmt.Errorf("%w: appending %d bytes would make %s %d bytes (max: %d)", ErrTooLarge,
			len(p.Content), k.shown, size, maxBytes)
	}
	return f.WriteString(p.Content)
}

// list returns a directory's entries (all the way down when recursive).
func (k op) list(recursive bool, res *FilesResult) error {
	st, err := k.root.Stat(k.rel)
	if err != nil {
		return k.fail("list", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("files: %s is not a directory", k.shown)
	}
	err = fs.WalkDir(k.root.FS(), k.rel, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == k.rel {
			return nil
		}
		if len(res.Entries) >= MaxEntries {
			res.Truncated = true
			return fs.SkipAll
		}
		name := path
		if k.rel != "." {
			name = strings.TrimPrefix(path, k.rel+"/")
		}
		e := Entry{Name: name, Type: "other"}
		switch {
		case d.IsDir():
			e.Type = "dir"
		case d.Type().IsRegular():
			// A file with more than one hard link is listed as other,
			// without its size: it may be a file outside the root, which
			// is neither read nor written (ErrHardLinked).
			if info, err := d.Info(); err == nil && !tools.HardLinked(info) {
				e.Type, e.Size = "file", info.Size()
			}
		}
		res.Entries = append(res.Entries, e)
		if d.IsDir() && !recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return k.fail("list", err)
	}
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Name < res.Entries[j].Name })
	return nil
}
