package wasm

import (
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

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

// diskQuota bounds the bytes a writable sandbox directory holds: the
// content of its regular files (their size, so a sparse file counts in
// full), the targets of its symbolic links and entryBytes per name. There is
// one per directory open now (see acquireQuota), shared by every module
// writing there — two listeners given the same dir, a listener and the one
// a reload replaced while it drains — and by all their instances. It is
// counted when the first of them opens the directory, again when one
// recounts it while no guest writing there runs (recount), and kept up to
// date by every change a guest makes through rootFS and rootFile, which
// take mu around the change and the fstat that measures it. The bound is
// the smallest quota of the modules sharing it (limit), so none of them
// finds the directory holding more than its own max_disk_bytes. Changes
// made by others (the operator) are not seen until it is counted again.
//
// A file removed while still open through the sandbox keeps its bytes on
// disk: they are released when its last descriptor is closed, not when
// its name goes.
type diskQuota struct {
	mu   sync.Mutex
	used int64
	// maxes counts the quotas of the modules sharing the directory, by
	// value: the smallest bounds it.
	maxes map[int64]int
	// running counts the calls in progress, through any of them.
	running int
	// open counts the regular files open through the directory, by
	// identity, so that a removed one is released at its last close.
	open map[fileID]int
	// id is the directory's identity, its key in quotas.
	id fileID
}

// fileID identifies a file on the host.
type fileID = diskquota.FileID

// newDiskQuota counts the bytes under dir (each inode's content once,
// however many names it has) for a quota of max bytes.
func newDiskQuota(dir string, max int64) (*diskQuota, error) {
	used, err := countDir(dir)
	if err != nil {
		return nil, err
	}
	return &diskQuota{used: used, maxes: map[int64]int{max: 1}, open: map[fileID]int{}}, nil
}

// countDir counts what a diskQuota on dir holds: the count every capped
// directory shares (diskquota.Count).
func countDir(dir string) (int64, error) { return diskquota.Count(dir) }

// recount counts dir (the directory, by any of its names) afresh, unless a
// call writing there runs or a file is open through it (their changes
// would be counted twice, or released twice): then the count is kept.
// done reports whether it was counted.
func (q *diskQuota) recount(dir string) (done bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running > 0 || len(q.open) > 0 {
		return false, nil
	}
	used, err := countDir(dir)
	if err != nil {
		return false, err
	}
	q.used = used
	return true, nil
}

// enter records a call that may write to the directory starting; the
// function it returns records its end.
func (q *diskQuota) enter() func() {
	q.mu.Lock()
	q.running++
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		q.running--
		q.mu.Unlock()
	}
}

// refusals counts the changes a disk quota refused, for one instance.
type refusals = atomic.Int64

// room is how many bytes may still be added (0 when at or over the quota);
// the caller holds mu.
func (q *diskQuota) room() int64 {
	return max(q.limit()-q.used, 0)
}

// limit is the smallest quota of the modules sharing the directory; the
// caller holds mu.
func (q *diskQuota) limit() int64 {
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
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
}

// Limit reports the quota that bounds the directory now (limit).
func (q *diskQuota) Limit() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit()
}

// opened records a regular file opened through the directory; the caller
// holds mu.
func (q *diskQuota) opened(id fileID) { q.open[id]++ }

// closing records that a descriptor of the regular file id, whose status
// (taken just before it is closed) is st, is being closed: at the last
// one, a file no longer linked anywhere is released. The caller holds mu.
func (q *diskQuota) closing(id fileID, st sys.Stat_t) {
	if q.open[id]--; q.open[id] > 0 {
		return
	}
	delete(q.open, id)
	if st.Nlink == 0 {
		q.used -= entryBytes + st.Size
	}
}

// removed releases what the name whose status was fi counted, once the
// name is gone (removed, or replaced by a rename): a regular file's
// content only with its last name, and not while it is open (closing
// releases it then). The caller holds mu.
func (q *diskQuota) removed(fi os.FileInfo) {
	st := sys.NewStat_t(fi)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		q.used -= entryBytes + st.Size
	case fi.Mode().IsRegular():
		switch {
		case st.Nlink > 1:
			q.used -= entryBytes
		case q.open[fileID{Dev: st.Dev, Ino: st.Ino}] == 0:
			q.used -= entryBytes + st.Size
		}
	default:
		q.used -= entryBytes
	}
}
