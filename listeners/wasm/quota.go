package wasm

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// errnoQuota is what a change past the disk quota fails with. WASI has an
// errno for it (nospc), but wazero's file system interface
// (experimental/sys.Errno, v1.12) has no ENOSPC: any errno it does not
// list reaches the guest as EIO, as the host's own ENOSPC does. So the
// guest sees EIO ("input/output error"), and the host tells the caller
// (a call that fails after a refusal wraps ErrDiskQuota; see refusals).
const errnoQuota = experimentalsys.EIO

// entryBytes is what each name in a writable directory (file, directory,
// symbolic link) counts against its disk quota besides its content: about
// an inode, so that a guest making empty files or directories by the
// million runs out of quota before the host runs out of inodes.
const entryBytes = 256

// diskQuota bounds the bytes a writable sandbox directory holds: the
// content of its regular files (their size, so a sparse file counts in
// full), the targets of its symbolic links and entryBytes per name. It is
// counted once, when the directory is opened (newDiskQuota), and then kept
// up to date by every change a guest makes through rootFS and rootFile,
// which take mu around the change and the fstat that measures it, so the
// instances of a module sharing the directory share one count. Changes
// made by others (the operator, another listener on the same directory)
// are not seen until the directory is opened again.
//
// A file removed while still open through the sandbox keeps its bytes on
// disk: they are released when its last descriptor is closed, not when
// its name goes.
type diskQuota struct {
	mu   sync.Mutex
	max  int64
	used int64
	// open counts the regular files open through the directory, by
	// identity, so that a removed one is released at its last close.
	open map[fileID]int
}

// fileID identifies a file on the host.
type fileID struct {
	dev uint64
	ino sys.Inode
}

// newDiskQuota counts the bytes under dir (each inode's content once,
// however many names it has) for a quota of max bytes.
func newDiskQuota(dir string, max int64) (*diskQuota, error) {
	q := &diskQuota{max: max, open: map[fileID]int{}}
	seen := map[fileID]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		q.used += entryBytes
		st := sys.NewStat_t(fi)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			q.used += st.Size
		case fi.Mode().IsRegular():
			id := fileID{st.Dev, st.Ino}
			if !seen[id] {
				seen[id] = true
				q.used += st.Size
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting its bytes for the disk quota: %w", err)
	}
	return q, nil
}

// refusals counts the changes a disk quota refused, for one instance.
type refusals = atomic.Int64

// room is how many bytes may still be added (0 when at or over the quota);
// the caller holds mu.
func (q *diskQuota) room() int64 {
	return max(q.max-q.used, 0)
}

// Used reports the bytes counted now.
func (q *diskQuota) Used() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
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
		case q.open[fileID{st.Dev, st.Ino}] == 0:
			q.used -= entryBytes + st.Size
		}
	default:
		q.used -= entryBytes
	}
}
