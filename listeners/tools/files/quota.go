package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
)

// DefaultMaxDiskBytes is what each root of a writable files tool may hold
// when tool_config sets no max_disk_bytes: 1 GiB. It is larger than a WASM
// guest's 64 MiB because a files root is often an existing working
// directory (a project's sources) that a tight cap would freeze at once;
// the cap is there so that a model cannot fill the disk.
const DefaultMaxDiskBytes = 1 << 30

// ledger is the disk use of one root directory, as package diskquota
// counts it. There is one per directory (by identity, so two roots naming
// one directory share it) for the whole process: every files listener
// writing there takes mu around its check and its write, so concurrent
// writes cannot pass the cap together. It is counted afresh when a
// listener (a Tool: one per build or reload of the organism) first writes
// there, after every delete (which may have removed anything, and so also
// sees what others changed meanwhile) and before a write it would refuse;
// between, each write adds what it grew the root by.
type ledger struct {
	mu      sync.Mutex
	used    int64
	counted bool
}

// countRoot counts a root for its ledger (a variable so that a test can
// make counting fail, which the root user running the tests cannot).
var countRoot = diskquota.Count

// ledgers are the roots' ledgers, by directory identity.
var ledgers = struct {
	mu    sync.Mutex
	byDir map[diskquota.FileID]*ledger
}{byDir: map[diskquota.FileID]*ledger{}}

// quota is a call's view of its root's ledger: the ledger, locked until
// done, and the cap that applies to the caller.
type quota struct {
	l     *ledger
	limit int64
	// name is the root as the caller names it.
	name string
	// dir is the root as configured, to count it again.
	dir string
	// fresh is set when the count was made by this call.
	fresh bool
}

// openQuota locks the ledger of the root open at root (configured as dir,
// named name) and, for a write, counts it if it must be; seen records the
// roots this Tool has counted. A delete does not count (it is allowed
// whatever the root holds, even one that cannot be counted): it only
// makes the next write count afresh. done unlocks the ledger.
func openQuota(root *os.Root, dir, name string, limit int64, seen *seenRoots, write bool) (q *quota, done func(), err error) {
	fi, err := root.Stat(".")
	if err != nil {
		return nil, nil, err
	}
	id := diskquota.IDOf(fi)
	ledgers.mu.Lock()
	l := ledgers.byDir[id]
	if l == nil {
		l = &ledger{}
		ledgers.byDir[id] = l
	}
	ledgers.mu.Unlock()
	l.mu.Lock()
	if seen.first(id) {
		l.counted = false // this listener is new (built or reloaded): count afresh
	}
	q = &quota{l: l, limit: limit, name: name, dir: dir}
	if !l.counted && write {
		if err := q.count(); err != nil {
			l.mu.Unlock()
			return nil, nil, err
		}
	}
	return q, l.mu.Unlock, nil
}

// seenRoots are the roots a Tool has written to.
type seenRoots struct {
	mu  sync.Mutex
	ids map[diskquota.FileID]bool
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

// count counts the root afresh; the caller holds the ledger.
func (q *quota) count() error {
	used, err := countRoot(q.dir)
	if err != nil {
		return err
	}
	q.l.used, q.l.counted, q.fresh = used, true, true
	return nil
}

// allow refuses a write of path (as the caller names it) that would grow
// the root by grow bytes past the cap; shrinking is always allowed. A
// write the count would refuse is checked again against a fresh count,
// so that room others made (the operator, by hand) is seen before a
// refusal.
func (q *quota) allow(path string, grow int64) error {
	if grow <= 0 || q.l.used+grow <= q.limit {
		return nil
	}
	if !q.fresh {
		if err := q.count(); err != nil {
			return fmt.Errorf("files: counting %s for its disk quota: %w", q.name, bare(err))
		}
		return q.allow(path, grow)
	}
	return fmt.Errorf("%w: writing %s would make root %s hold %d bytes (max_disk_bytes %d, %d used; each name counts %d): "+
		"delete something first", ErrDiskQuota, path, q.name, q.l.used+grow, q.limit, q.l.used, diskquota.EntryBytes)
}

// add records that the root grew by n bytes (shrank, when negative).
func (q *quota) add(n int64) { q.l.used += n }

// recount makes the next write count the root afresh: what a delete
// removed, or a write whose effect is unknown (it failed part-way).
func (q *quota) recount() { q.l.counted = false }

// before is what the write of rel through root starts from: the size of
// the file it replaces or appends to, and whether it makes a new name.
func before(root *os.Root, rel string) (size int64, created bool, err error) {
	st, err := root.Stat(rel)
	switch {
	case err == nil:
		return st.Size(), false, nil
	case errors.Is(err, fs.ErrNotExist):
		return 0, true, nil
	}
	return 0, false, err
}
