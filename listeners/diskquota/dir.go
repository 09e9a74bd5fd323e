package diskquota

import (
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// MaxAge bounds how stale a Dir's figure may grow: a writer finding it
// older counts the directory afresh (outside the lock) before its change,
// so what others (the operator, a program) add or remove there is seen
// within about that long even when nothing marks the figure stale.
const MaxAge = time.Minute

// RetryAfter is how long a count that failed stands before a stale figure
// is counted again: until then Fresh reports that failure at once, so a
// directory that cannot be counted is not walked at every write.
const RetryAfter = time.Second

// Dir is the shared figure of one directory's disk use, as Count counts
// it: one per directory (by identity, so two paths naming one directory
// share it) for the whole process, updated by every writer in the process
// (the files tool and every WASM guest writing there) under its lock, so
// that their changes together cannot pass a quota by more than one change.
// Its cap is the smallest its writers declare (Declare, Limit).
// It is counted once, then kept up to date by each writer's changes, and
// counted again only when it may be wrong: never counted, marked stale
// (Invalidate: a change whose effect is unknown, a program that may have
// written there), older than MaxAge, or about to refuse a change. A count
// walks the directory outside the lock; changes recorded meanwhile make it
// count once more, under the lock.
//
// Regular files a writer holds open are registered (Opened), so that one
// removed while open is released at its last close, not when its name goes,
// whichever writer removed it; while any is open the figure is not counted
// afresh (the walk cannot see a removed file still taking room).
type Dir struct {
	mu   sync.Mutex
	used int64
	// counted is set while used is a count kept up to date.
	counted bool
	// countedAt is when used was last counted.
	countedAt time.Time
	// gen changes with every change recorded, to tell whether one was
	// recorded while a count walked the directory.
	gen uint64
	// seq counts the counts made: a caller asking for a count made after
	// it saw seq gets one made by whoever counts first.
	seq uint64
	// open counts the regular files open through writers, by identity.
	open map[FileID]int
	// failed is the error of the last count, when it failed (at
	// failedAt); nil once one succeeds.
	failed   error
	failedAt time.Time
	// counting serializes counts, so that writers needing one at once
	// share it.
	counting sync.Mutex
	// caps are the caps its writers declare (Declare): it holds at most
	// the smallest.
	caps map[*Cap]struct{}
	// held is the directory, kept open while the Dir is in dirs: its inode
	// cannot be reused while it is open, and once the directory is removed
	// (held reports no link), a directory of the same identity is another
	// one, which gets a Dir of its own (see DirOf).
	held *os.File
}

// removed reports whether the directory d was made for is gone (removed,
// or no longer readable), so that its identity may now name another one.
func (d *Dir) removed() bool {
	if d.held == nil {
		return true
	}
	fi, err := d.held.Stat()
	return err != nil || sys.NewStat_t(fi).Nlink == 0
}

// dirs are the Dirs of the process, by directory identity. A Dir is kept
// for the process's life, or until its directory is removed and another
// takes its identity: the directories a process writes to are the ones its
// configuration names.
var dirs = struct {
	mu   sync.Mutex
	byID map[FileID]*Dir
}{byID: map[FileID]*Dir{}}

// identify is the key of a directory in dirs (a variable so that a test can
// give a new directory the identity of a removed one, as a file system
// reusing its inode would).
var identify = IDOf

// DirOf returns the Dir of the directory root is open on (making it, not
// counted yet, if none is). A Dir whose directory was removed is not
// returned for a new directory that has its identity (a reused inode, which
// the held descriptor prevents on most file systems, but not every one
// keeps): the new one gets a Dir of its own, counted afresh.
func DirOf(root *os.Root) (*Dir, error) {
	fi, err := root.Stat(".")
	if err != nil {
		return nil, err
	}
	id := identify(fi)
	dirs.mu.Lock()
	defer dirs.mu.Unlock()
	d := dirs.byID[id]
	if d != nil && !d.removed() {
		return d, nil
	}
	if d != nil {
		d.held.Close() // the removed directory's Dir stays with its writers, uncounted by new ones
	}
	held, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	d = &Dir{open: map[FileID]int{}, held: held}
	dirs.byID[id] = d
	return d, nil
}

// Invalidate marks the Dir of the directory at path, if there is one,
// stale: its next writer counts it afresh before changing anything. A
// program that may have written there (run_command) calls it when it ends.
func Invalidate(path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return // gone or unreadable: nothing counts it
	}
	dirs.mu.Lock()
	d := dirs.byID[identify(fi)]
	if d != nil && d.removed() {
		d = nil // another directory's figure
	}
	dirs.mu.Unlock()
	if d != nil {
		d.Invalidate()
	}
}

// Lock takes the lock a writer holds around its check and its change.
func (d *Dir) Lock() { d.mu.Lock() }

// Unlock releases Lock.
func (d *Dir) Unlock() { d.mu.Unlock() }

// Used reports the bytes counted now; the caller holds the lock.
func (d *Dir) Used() int64 { return d.used }

// Add records that the directory grew by n bytes (shrank, when negative);
// the caller holds the lock.
func (d *Dir) Add(n int64) {
	d.used += n
	d.gen++
}

// Seq identifies the last count; the caller holds the lock. Recount(…,
// seq) counts unless a count was made since.
func (d *Dir) Seq() uint64 { return d.seq }

// Stale reports whether the figure must be counted before it is relied on:
// never counted, marked stale or older than MaxAge. The caller holds the
// lock.
func (d *Dir) Stale() bool {
	return !d.counted || time.Since(d.countedAt) > MaxAge
}

// Invalidate marks the figure stale (see Stale), to be counted at once
// even if a count failed less than RetryAfter ago. It takes the lock.
func (d *Dir) Invalidate() {
	d.mu.Lock()
	d.invalidate()
	d.mu.Unlock()
}

// invalidate is Invalidate for a caller holding the lock.
func (d *Dir) invalidate() {
	d.counted, d.failed = false, nil
	d.gen++
}

// InvalidateLocked is Invalidate for a caller holding the lock: a change
// whose effect is unknown (it failed part-way, or removed a whole tree).
func (d *Dir) InvalidateLocked() { d.invalidate() }

// Recount counts the directory afresh with count, unless a count was made
// since the caller saw seq (Seq) — then that one stands — or a writer holds
// a file open there (the count is kept). The caller does not hold the lock:
// the walk runs outside it, so other writers go on meanwhile, and is made
// once more, under the lock, if one of them recorded a change during it.
// counted reports whether the figure is a count made after seq.
func (d *Dir) Recount(seq uint64, count func() (int64, error)) (counted bool, err error) {
	d.counting.Lock()
	defer d.counting.Unlock()
	d.mu.Lock()
	if d.seq != seq {
		d.mu.Unlock()
		return true, nil
	}
	if len(d.open) > 0 {
		d.mu.Unlock()
		return false, nil
	}
	gen := d.gen
	d.mu.Unlock()
	used, err := count()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil && len(d.open) > 0 {
		return false, nil
	}
	if err == nil && d.gen != gen { // a change raced the walk: count again, holding the lock
		used, err = count()
	}
	if err != nil {
		d.failed, d.failedAt = err, time.Now()
		return false, err
	}
	d.used, d.counted, d.countedAt, d.failed = used, true, time.Now(), nil
	d.seq++
	d.gen++
	return true, nil
}

// Fresh counts the directory afresh (Recount) if its figure is stale; the
// caller does not hold the lock. A figure that cannot be counted because a
// file is held open is used as it is. A count that failed less than
// RetryAfter ago is not made again: its error is returned.
func (d *Dir) Fresh(count func() (int64, error)) error {
	d.mu.Lock()
	stale, seq, failed := d.Stale(), d.seq, d.failed
	if failed != nil && time.Since(d.failedAt) >= RetryAfter {
		failed = nil
	}
	d.mu.Unlock()
	if !stale {
		return nil
	}
	if failed != nil {
		return failed
	}
	_, err := d.Recount(seq, count)
	return err
}

// Opened records a regular file opened through a writer; the caller holds
// the lock.
func (d *Dir) Opened(id FileID) { d.open[id]++ }

// Closing records that a descriptor of the regular file id, whose status
// (taken just before it is closed) is fi (nil: unknown), is being closed:
// at the last one, a file no longer linked anywhere is released. One whose
// status is unknown stays counted (never too little) until the next count.
// The caller holds the lock.
func (d *Dir) Closing(id FileID, fi fs.FileInfo) {
	if d.open[id]--; d.open[id] > 0 {
		return
	}
	delete(d.open, id)
	if fi != nil && sys.NewStat_t(fi).Nlink == 0 {
		d.Add(-(EntryBytes + Content(fi)))
	}
}

// Removed releases what the name whose status was fi counted, once the
// name is gone (removed, or replaced by a rename): a regular file's content
// only with its last name, and not while it is open (Closing releases it
// then); a directory what it took (DirBytes). What the directory that
// held the name changed by is the caller's to record. The caller holds the
// lock.
func (d *Dir) Removed(fi fs.FileInfo) {
	st := sys.NewStat_t(fi)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		d.Add(-(EntryBytes + Content(fi)))
	case fi.Mode().IsRegular():
		switch {
		case st.Nlink > 1:
			d.Add(-EntryBytes)
		case d.open[FileID{Dev: st.Dev, Ino: st.Ino}] == 0:
			d.Add(-(EntryBytes + Content(fi)))
		}
	case fi.IsDir():
		d.Add(-DirBytes(fi))
	default:
		d.Add(-EntryBytes)
	}
}
