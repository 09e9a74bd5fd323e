package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// DefaultMaxDiskBytes is what each root of a writable files tool may hold
// when tool_config sets no max_disk_bytes: 1 GiB. It is larger than a WASM
// guest's 64 MiB because a files root is often an existing working
// directory (a project's sources) that a tight cap would freeze at once;
// the cap is there so that a model cannot fill the disk.
const DefaultMaxDiskBytes = 1 << 30

// countRoot counts a root for its figure (a variable so that a test can
// make counting fail, which the root user running the tests cannot).
var countRoot = diskquota.Count

// quota is a call's view of its root's disk use: the directory's shared
// figure (diskquota.Dir: one per directory for the process, which WASM
// guests writing there update too), locked until done, and the cap that
// applies to the caller. The figure is counted when a listener (a Tool:
// one per build or reload of the organism) first writes there, when it is
// stale (see diskquota.Dir) and before a write it would refuse, each time
// outside the lock; between, each write and delete records what it changed.
type quota struct {
	d     *diskquota.Dir
	limit int64
	// name is the root as the caller names it.
	name string
	// dir is the root as configured, to count it again.
	dir string
	// fresh is set once this call has had the root counted.
	fresh bool
}

// openQuota locks the figure of the root open at root (configured as dir,
// named name) and, for a write, counts it first (outside the lock) if it
// must be; seen records the roots this Tool has written to, and declares
// caller's limit on the figure (diskquota.Cap) as policy gives it, so that
// the directory's other writers hold to it too. A delete does not count (it is allowed
// whatever the root holds, even one that cannot be counted). done unlocks
// the figure.
func openQuota(root *os.Root, dir, name, caller string, limit int64, policy tools.Policy, seen *seenRoots,
	write bool) (q *quota, done func(), err error) {
	fi, err := root.Stat(".")
	if err != nil {
		return nil, nil, err
	}
	d, err := diskquota.DirOf(root)
	if err != nil {
		return nil, nil, err
	}
	q = &quota{d: d, limit: limit, name: name, dir: dir}
	if seen.first(diskquota.IDOf(fi)) {
		d.Invalidate() // this listener is new (built or reloaded): count afresh
	}
	seen.declare(d, dir, caller, policy)
	if write {
		if err := d.Fresh(q.countFunc()); err != nil {
			return nil, nil, err
		}
	}
	d.Lock()
	return q, d.Unlock, nil
}

// countFunc counts the root.
func (q *quota) countFunc() func() (int64, error) {
	return func() (int64, error) { return countRoot(q.dir) }
}

// seenRoots are the roots a Tool has written to, and the caps it declared
// on them.
type seenRoots struct {
	mu  sync.Mutex
	ids map[diskquota.FileID]bool
	// caps are the caps this Tool declared (see declared).
	caps map[capKey]bool
}

// capKey identifies a declared cap: a directory's figure and a caller.
type capKey struct {
	d      *diskquota.Dir
	caller string
}

// declared are the caps the files listeners of the process declared, one
// per directory and caller (whose tool_config gives it), each live: at
// every check of the directory's limit it is what the caller's
// configuration gives it now (sharedCap.current), so a reload that changes
// the caller's max_disk_bytes changes the cap, and one that removes the
// caller (or its files config, or the directory from it) ends it at once
// rather than at shutdown. A listener a reload built in place of another
// updates the same cap. A cap is released when no listener that declared
// it is left (Close).
var declared = struct {
	mu   sync.Mutex
	caps map[capKey]*sharedCap
}{caps: map[capKey]*sharedCap{}}

// sharedCap is one declared cap and how many listeners declared it.
type sharedCap struct {
	c     *diskquota.Cap
	users int
	// caller and dir (the root as configured) are whose cap it is and
	// where; policy is the configuration of the listener that declared it
	// last (guarded by the directory's lock).
	caller, dir string
	policy      tools.Policy
}

// current is the cap as the caller's configuration gives it now, and
// false when it no longer lets the caller write to the directory (the
// caller removed, read_only, another root): a diskquota live cap. It runs
// with the directory's lock held.
func (sc *sharedCap) current() (int64, bool) {
	c := sc.policy.Config(sc.caller, Name)
	if c.ReadOnly {
		return 0, false
	}
	roots, err := tools.Roots(c.AllowedPaths)
	if err != nil {
		return 0, false
	}
	for _, r := range roots {
		if r.Dir == sc.dir {
			return int64(tools.Or(c.MaxDiskBytes, DefaultMaxDiskBytes)), true
		}
	}
	return 0, false
}

// declare declares caller's cap on d, the root configured as dir, as
// policy gives it (or makes policy the one that gives it).
func (s *seenRoots) declare(d *diskquota.Dir, dir, caller string, policy tools.Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	declared.mu.Lock()
	defer declared.mu.Unlock()
	k := capKey{d, caller}
	sc := declared.caps[k]
	if sc == nil {
		sc = &sharedCap{caller: caller, dir: dir, policy: policy}
		sc.c = d.DeclareLive(sc.current)
		declared.caps[k] = sc
	} else {
		d.Lock()
		sc.dir, sc.policy = dir, policy
		d.Unlock()
	}
	if !s.caps[k] {
		if s.caps == nil {
			s.caps = map[capKey]bool{}
		}
		s.caps[k] = true
		sc.users++
	}
}

// release gives back every cap this Tool declared: one no other listener
// declared ends.
func (s *seenRoots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	declared.mu.Lock()
	defer declared.mu.Unlock()
	for k := range s.caps {
		delete(s.caps, k)
		sc := declared.caps[k]
		if sc == nil {
			continue
		}
		if sc.users--; sc.users > 0 {
			continue
		}
		delete(declared.caps, k)
		k.d.Lock()
		sc.c.Release()
		k.d.Unlock()
	}
}

// first reports whether id is seen for the first time, and records it.
func (s *seenRoots) first(id diskquota.FileID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return false
	}
	if s.ids == nil {
		s.ids = map[diskquota.FileID]bool{}
	}
	s.ids[id] = true
	return true
}

// errRecounted tells a write that the root was counted afresh for it
// (allow): what it measured before must be measured again.
var errRecounted = errors.New("files: the root was counted again")

// allow refuses a write of path (as the caller names it) that would grow
// the root by grow bytes past the cap; shrinking is always allowed. The
// caller holds the figure's lock. A write the figure would refuse is
// checked again against a fresh count, made outside the lock (errRecounted:
// the caller measures again and asks again), so that room others made (the
// operator, by hand) is seen before a refusal; a count another call made
// meanwhile serves this one too.
func (q *quota) allow(path string, grow int64) error {
	limit := q.d.Limit(q.limit)
	if grow <= 0 || q.d.Used()+grow <= limit {
		return nil
	}
	if !q.fresh {
		q.fresh = true
		seq := q.d.Seq()
		q.d.Unlock()
		_, err := q.d.Recount(seq, q.countFunc())
		q.d.Lock()
		if err != nil {
			return fmt.Errorf("files: counting %s for its disk quota: %w", q.name, bare(err))
		}
		return errRecounted
	}
	used := q.d.Used()
	capped := fmt.Sprintf("max_disk_bytes %d", q.limit)
	if limit < q.limit {
		capped += fmt.Sprintf(" but another writer of the directory (a WASM guest's dir, another agent's files) caps it at %d", limit)
	}
	return fmt.Errorf("%w: writing %s would make root %s hold %d bytes (%s, %d used; a file counts its size in "+
		"whole %d-byte blocks, each name a block more): delete something first", ErrDiskQuota, path, q.name, used+grow,
		capped, used, diskquota.BlockBytes)
}

// add records that the root grew by n bytes (shrank, when negative).
func (q *quota) add(n int64) { q.d.Add(n) }

// recount makes the next write count the root afresh: a change whose
// effect is unknown (it failed part-way, or removed a whole tree).
func (q *quota) recount() { q.d.InvalidateLocked() }

// removed records that the name whose status was fi is gone.
func (q *quota) removed(fi fs.FileInfo) { q.d.Removed(fi) }

// was is what a file a write replaces or appends to was: its size, and
// what it counted (diskquota.Content).
type was struct {
	size, counted int64
}

// before is what the write of rel through root starts from: the file it
// replaces or appends to, and whether it makes a new name.
func before(root *os.Root, rel string) (old was, created bool, err error) {
	st, err := root.Stat(rel)
	switch {
	case err == nil:
		return was{size: st.Size(), counted: diskquota.Content(st)}, false, nil
	case errors.Is(err, fs.ErrNotExist):
		return was{}, true, nil
	}
	return was{}, false, err
}

// removedTree records that the tree t counted is gone.
func (q *quota) removedTree(t diskquota.Tree) { q.d.RemovedTree(t) }

// parentBytes is what the directory holding the call's path counts
// (diskquota.DirBytes), or -1 when it cannot be told.
func (k op) parentBytes() int64 {
	fi, err := k.root.Stat(path.Dir(k.rel))
	if err != nil || !fi.IsDir() {
		return -1
	}
	return diskquota.DirBytes(fi)
}

// parentGrew records in q what the directory holding the call's path,
// which counted before (parentBytes) ahead of a name made or removed
// there, grew by; one that cannot be measured has the root counted afresh
// at the next write.
func (k op) parentGrew(q *quota, before int64) {
	after := k.parentBytes()
	if before < 0 || after < 0 {
		q.recount()
		return
	}
	q.add(after - before)
}
