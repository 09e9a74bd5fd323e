package wasm

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
)

// rootFile is a regular file or directory a guest opened through rootFS.
// It works on the open descriptor only: nothing is reopened by name, so a
// file cannot be swapped for one outside the directory once open.

type rootFile struct {
	seeker[int64]
	f        *os.File
	dev      uint64
	ino      sys.Inode
	isDir    bool
	append   bool
	readOnly bool
	closed   bool
	open     *atomic.Int64 // its file system's count of open files
	// quota is the directory's disk quota (nil: read-only, or not a
	// regular file): every change of size is measured against it.
	quota *diskQuota
	// refused is its file system's count of changes the quota refused.
	refused *refusals
}

// newRootFile wraps f, whose status is fi, opened with flag; open counts
// it until it is closed.
func newRootFile(f *os.File, fi os.FileInfo, flag experimentalsys.Oflag, readOnly bool, open *atomic.Int64) *rootFile {
	st := sys.NewStat_t(fi)
	return &rootFile{seeker: seeker[int64]{f}, f: f, dev: st.Dev, ino: st.Ino, isDir: fi.IsDir(),
		append: flag&experimentalsys.O_APPEND != 0, readOnly: readOnly, open: open}
}

// Dev implements experimentalsys.File.
func (f *rootFile) Dev() (uint64, experimentalsys.Errno) { return f.dev, 0 }

// Ino implements experimentalsys.File.
func (f *rootFile) Ino() (sys.Inode, experimentalsys.Errno) { return f.ino, 0 }

// IsDir implements experimentalsys.File.
func (f *rootFile) IsDir() (bool, experimentalsys.Errno) { return f.isDir, 0 }

// IsAppend implements experimentalsys.File.
func (f *rootFile) IsAppend() bool { return f.append }

// SetAppend implements experimentalsys.File, on the descriptor (fcntl).
func (f *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	if f.isDir {
		return experimentalsys.EISDIR
	}
	if errno := errnoOf(setFlag(f.f, syscall.O_APPEND, enable)); errno != 0 {
		return errno
	}
	f.append = enable
	return 0
}

// Stat implements experimentalsys.File.
func (f *rootFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	fi, err := f.f.Stat()
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

// Read implements experimentalsys.File.
func (f *rootFile) Read(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.f.Read(buf)
	return n, errnoOf(err)
}

// Pread implements experimentalsys.File.
func (f *rootFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.f.ReadAt(buf, off)
	return n, errnoOf(err)
}

// seeker gives rootFile its Seek method (experimentalsys.File's: offset 0
// from the start rewinds a directory). It is generic only because go vet's
// stdmethods check wants every Seek(int64, int) to return (int64, error),
// where wazero's interface returns an Errno; with the offset's type a type
// parameter the check does not apply.
type seeker[T ~int64] struct{ f *os.File }

// Seek implements experimentalsys.File.
func (s seeker[T]) Seek(offset T, whence int) (int64, experimentalsys.Errno) {
	if whence < io.SeekStart || whence > io.SeekEnd {
		return 0, experimentalsys.EINVAL
	}
	n, err := s.f.Seek(int64(offset), whence)
	return n, errnoOf(err)
}

// Readdir implements experimentalsys.File: up to n entries (all when n <=
// 0), each stat'ed relative to the open directory (fstatat).
func (f *rootFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if !f.isDir {
		return nil, experimentalsys.EBADF
	}
	fis, err := f.f.Readdir(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errnoOf(err)
	}
	out := make([]experimentalsys.Dirent, 0, len(fis))
	for _, fi := range fis {
		out = append(out, experimentalsys.Dirent{Name: fi.Name(), Ino: sys.NewStat_t(fi).Ino, Type: fi.Mode().Type()})
	}
	return out, 0
}

// Write implements experimentalsys.File.
func (f *rootFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	if f.quota == nil {
		n, err := f.f.Write(buf)
		return n, errnoOf(err)
	}
	return f.writeCounted(buf, -1, func(b []byte) (int, error) { return f.f.Write(b) })
}

// Pwrite implements experimentalsys.File.
func (f *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if len(buf) == 0 {
		return 0, 0
	}
	if f.quota == nil {
		n, err := f.f.WriteAt(buf, off)
		return n, errnoOf(err)
	}
	return f.writeCounted(buf, off, func(b []byte) (int, error) { return f.f.WriteAt(b, off) })
}

// writeCounted writes buf with write at offset off (-1: the file's own
// offset) within the disk quota: what would grow the file's count
// (diskquota.Content: its size in whole blocks, or the blocks it takes)
// past it is cut off at a block boundary, and a write of which nothing fits
// fails (errnoQuota), as on a full disk. What it grew by is measured (fstat
// before and after) under the quota's lock.
func (f *rootFile) writeCounted(buf []byte, off int64, write func([]byte) (int, error)) (int, experimentalsys.Errno) {
	f.quota.lock()
	defer f.quota.unlock()
	before, err := f.f.Stat()
	if err != nil {
		return 0, errnoOf(err)
	}
	switch {
	case f.append:
		off = before.Size() // O_APPEND writes at the end, pwrite's offset included (Linux)
	case off < 0:
		if off, err = f.f.Seek(0, io.SeekCurrent); err != nil {
			return 0, errnoOf(err)
		}
	}
	counted := diskquota.Content(before)
	// The file may count up to counted+room: its end at most the last
	// whole block of that (within its size already, it grows nothing).
	if end := off + int64(len(buf)); end > before.Size() && diskquota.RoundUp(end) > counted+f.quota.room() {
		keep := (counted+f.quota.room())/diskquota.BlockBytes*diskquota.BlockBytes - off
		if keep <= 0 {
			f.refused.Add(1)
			return 0, errnoQuota
		}
		buf = buf[:min(keep, int64(len(buf)))]
	}
	n, werr := write(buf)
	f.measured(counted)
	return n, errnoOf(werr)
}

// measured records what the file's count changed by since it was counted
// (what it counted then); the caller holds the quota's lock. A file that
// cannot be measured has the directory counted afresh before the next
// call.
func (f *rootFile) measured(counted int64) {
	after, err := f.f.Stat()
	if err != nil {
		f.quota.d.InvalidateLocked()
		return
	}
	f.quota.add(diskquota.Content(after) - counted)
}

// Truncate implements experimentalsys.File: growing a file's count
// (diskquota.Content: a file grown by truncate counts its whole new size,
// though it takes no block yet) past the disk quota fails (errnoQuota).
func (f *rootFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if f.isDir {
		return experimentalsys.EISDIR
	}
	if f.quota == nil {
		return errnoOf(f.f.Truncate(size))
	}
	f.quota.lock()
	defer f.quota.unlock()
	before, err := f.f.Stat()
	if err != nil {
		return errnoOf(err)
	}
	counted := diskquota.Content(before)
	if size > before.Size() && diskquota.RoundUp(size)-counted > f.quota.room() {
		f.refused.Add(1)
		return errnoQuota
	}
	terr := f.f.Truncate(size)
	f.measured(counted)
	return errnoOf(terr)
}

// Sync implements experimentalsys.File.
func (f *rootFile) Sync() experimentalsys.Errno { return errnoOf(f.f.Sync()) }

// Datasync implements experimentalsys.File (a full sync).
func (f *rootFile) Datasync() experimentalsys.Errno { return errnoOf(f.f.Sync()) }

// Utimens implements experimentalsys.File.
func (f *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	rc, err := f.f.SyscallConn()
	if err != nil {
		return errnoOf(err)
	}
	var uerr error
	if err := rc.Control(func(fd uintptr) { uerr = futimens(int(fd), atim, mtim) }); err != nil {
		return errnoOf(err)
	}
	return errnoOf(uerr)
}

// Close implements experimentalsys.File; closing twice is not an error.
func (f *rootFile) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	f.open.Add(-1)
	if f.quota != nil {
		f.quota.lock()
		defer f.quota.unlock()
		fi, err := f.f.Stat()
		if err != nil {
			fi = nil // unknown: a removed file stays counted, never too little
		}
		f.quota.d.Closing(fileID{Dev: f.dev, Ino: f.ino}, fi)
	}
	return errnoOf(f.f.Close())
}

// setFlag sets or clears a file status flag (O_APPEND, O_NONBLOCK) of f's
// descriptor.
func setFlag(f *os.File, flag int, on bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr != nil {
			return
		}
		if on {
			fl |= flag
		} else {
			fl &^= flag
		}
		_, ferr = unix.FcntlInt(fd, unix.F_SETFL, fl)
	}); err != nil {
		return err
	}
	return ferr
}

var _ experimentalsys.File = (*rootFile)(nil)
