package wasm

import (
	"fmt"
	"os"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
)

// errnoQuota is what a change past the disk quota fails with. WASI has an
// errno for it (nospc), but wazero's file system interface
// (experimental/sys.Errno, v1.12) has no ENOSPC: any errno it does not
// list reaches the guest as EIO, as the host's own ENOSPC does. So the
// guest sees EIO ("input/output error"), and the host tells the caller
// (a call that fails after a refusal wraps ErrDiskQuota; see refusals).
const errnoQuota = experimentalsys.EIO

// entryBytes is what each name in a writable directory counts against its
// disk quota besides its content (diskquota.EntryBytes).
const entryBytes = diskquota.EntryBytes

// diskQuota bounds the disk a writable sandbox directory takes: the
// content of its regular files and its symbolic links' targets in whole
// blocks (diskquota.Content: a sparse file counts its whole size, a
// preallocated one the blocks it takes) and entryBytes (a block) per name.
// There is
// one per directory open now (see acquireQuota), shared by every module
// writing there — two listeners given the same dir, a listener and the one
// a reload replaced while it drains — and by all their instances. Its
// figure is the directory's diskquota.Dir, the one every writer in the
// process updates (the files tool too): counted when the first module
// opens the directory, again when one recounts it while no guest writing
// there runs (recount), and before a call when the figure is stale
// (something marked it, run_command writing there say, or it is older than
// diskquota.MaxAge); kept up to date by every change a guest makes through
// rootFS and rootFile, which take the Dir's lock around the change and the
// fstat that measures it, and by every other writer's. The bound is the
// smallest quota of the modules sharing it and of the directory's other
// writers (limit: a files root's max_disk_bytes, declared on the Dir), so
// none of them finds the directory holding more than its own
// max_disk_bytes.
//
// A file removed while still open through the sandbox keeps its bytes on
// disk: they are released when its last descriptor is closed, not when
// its name goes (diskquota.Dir.Opened, Closing).
type diskQuota struct {
	// d is the directory's figure and lock; the fields below are guarded
	// by its lock.
	d *diskquota.Dir
	// maxes counts the quotas of the modules sharing the directory, by
	// value: the smallest bounds it.
	maxes map[int64]int
	// running counts the calls in progress, through any of them.
	running int
	// id is the directory's identity, its key in quotas.
	id fileID
	// cap declares the smallest of maxes on the directory's figure, so
	// that its other writers (the files tool) hold to it too.
	cap *diskquota.Cap
}

// fileID identifies a file on the host.
type fileID = diskquota.FileID

// newDiskQuota counts the bytes under the directory root is open on (dir;
// each inode's content once, however many names it has) for a quota of max
// bytes.
func newDiskQuota(root *os.Root, dir string, max int64) (*diskQuota, error) {
	d, err := diskquota.DirOf(root)
	if err != nil {
		return nil, fmt.Errorf("identifying it for the disk quota: %w", err)
	}
	d.Lock()
	seq := d.Seq()
	d.Unlock()
	if _, err := d.Recount(seq, countFunc(dir)); err != nil {
		return nil, err
	}
	return &diskQuota{d: d, maxes: map[int64]int{max: 1}, cap: d.Declare(max)}, nil
}

// countDir counts what a diskQuota on dir holds: the count every capped
// directory shares (diskquota.Count).
func countDir(dir string) (int64, error) { return diskquota.Count(dir) }

// countFunc counts dir for a diskQuota: the count every capped directory
// shares (diskquota.Count).
func countFunc(dir string) func() (int64, error) {
	return func() (int64, error) { return countDir(dir) }
}

// recount counts dir (the directory, by any of its names) afresh, unless a
// call writing there runs or a file is open through it (their changes
// would be counted twice, or released twice): then the count is kept.
// done reports whether it was counted.
func (q *diskQuota) recount(dir string) (done bool, err error) {
	q.d.Lock()
	running, seq := q.running, q.d.Seq()
	q.d.Unlock()
	if running > 0 {
		return false, nil
	}
	return q.d.Recount(seq, countFunc(dir))
}

// enter records a call that may write to the directory (dir) starting,
// first counting the directory afresh if its figure is stale; the function
// it returns records its end. A stale figure that cannot be counted (a
// file is open there) is used as it is; one whose count fails is too, the
// failure logged by the caller.
func (q *diskQuota) enter(dir string) (end func(), err error) {
	err = q.d.Fresh(countFunc(dir))
	q.d.Lock()
	q.running++
	q.d.Unlock()
	return func() {
		q.d.Lock()
		q.running--
		q.d.Unlock()
	}, err
}

// refusals counts the changes a disk quota refused, for one instance.
type refusals = atomic.Int64

// room is how many bytes may still be added (0 when at or over the quota);
// the caller holds the lock.
func (q *diskQuota) room() int64 {
	return max(q.limit()-q.d.Used(), 0)
}

// limit is what the directory may hold: the smallest quota of the modules
// sharing it and of its other writers (a files root's max_disk_bytes,
// diskquota.Dir.Limit); the caller holds the lock.
func (q *diskQuota) limit() int64 { return q.d.Limit(q.own()) }

// own is the smallest quota of the modules sharing the directory; the
// caller holds the lock.
func (q *diskQuota) own() int64 {
	first := true
	var least int64
	for m := range q.maxes {
		if first || m < least {
			least, first = m, false
		}
	}
	return least
}

// Used reports the bytes counted now.
func (q *diskQuota) Used() int64 {
	q.d.Lock()
	defer q.d.Unlock()
	return q.d.Used()
}

// Limit reports the quota that bounds the directory now (limit).
func (q *diskQuota) Limit() int64 {
	q.d.Lock()
	defer q.d.Unlock()
	return q.limit()
}

// add records that the directory grew by n bytes; the caller holds the
// lock.
func (q *diskQuota) add(n int64) { q.d.Add(n) }

// lock takes the directory's lock, shared with every writer there.
func (q *diskQuota) lock() { q.d.Lock() }

// unlock releases lock.
func (q *diskQuota) unlock() { q.d.Unlock() }
