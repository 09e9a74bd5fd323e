package wasm

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
)

// rootFS is the filesystem a guest sees at /data: the sandbox's directory
// opened as an os.Root, so that every path the guest names — to open,
// create, rename, link, stat, remove or read as a link — is resolved one
// component at a time, each opened relative to the directory already
// reached (openat(2) without following links), beneath that directory:
// never by string checks. Symbolic links, those already in the directory and those the
// guest makes, are followed only while they stay beneath it: a link with an
// absolute target, or whose ".." climbs above the directory, fails with
// EPERM. The guest cannot make such a link at all (Symlink refuses an
// absolute target or one with a ".." component), so nothing it leaves
// behind leads out either when the host follows it.
//
// Files that are neither regular files nor directories (FIFOs, devices,
// sockets) are refused with EACCES, and so is a regular file with more
// than one hard link (the guest cannot make one: Link is refused, so such
// a name is someone else's, possibly for a file outside the directory):
// opening it and stat'ing it alike, so its size and times stay unseen; the open that finds them is made with
// O_NONBLOCK, so it never waits for a FIFO's writer. Modes are limited to
// the permission bits (no set-user-ID file can be made). A read-only mount
// refuses every change with EROFS. At most maxOpenFiles files are open at
// once through one rootFS, the preopened /data included: past that, opens
// fail with EAGAIN rather than use up the organism's file descriptors. A
// module keeps one rootFS and gives each instance its own view (see view),
// so the budget is per instance: instances do not take each other's, and
// any number of them can preopen /data.
//
// A writable rootFS has a disk quota (see diskQuota), shared by every view
// and by every other rootFS open on the same directory:
// a change that would take the directory past it (a write, a truncate or
// a write past the end that grows a file, a new file, directory or link)
// fails (errnoQuota); a write that only partly fits writes what fits, as
// on a full disk. Each view counts the changes refused (quotaRefusals).
//
// wazero has already cleaned the guest's path and refused a rooted one or
// one starting with ".." before calling; rootFS does not depend on that.
type rootFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	rootID   fileID // the directory's own, where depthOf stops
	readOnly bool
	open     atomic.Int64 // files open now
	max      int64        // files open at most (maxOpenFiles)
	// quota bounds the directory's bytes (nil: read-only, nothing grows).
	quota *diskQuota
	// refused counts the changes the quota refused through this view.
	refused refusals
	// maxDisk is the quota this rootFS asked for (acquireQuota); release,
	// set on the rootFS openRootFS made and not on its views, gives it back.
	maxDisk int64
	release func()
}

// maxOpenFiles bounds the files one instance holds open at once.
const maxOpenFiles = 256

// openRootFS opens dir for a guest; a writable one (readOnly false) holds
// at most maxDisk bytes, counting those already there.
func openRootFS(dir string, readOnly bool, maxDisk int64) (*rootFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	r := &rootFS{root: root, readOnly: readOnly, max: maxOpenFiles, maxDisk: maxDisk}
	fi, err := root.Stat(".")
	if err != nil {
		return nil, errors.Join(err, root.Close())
	}
	r.rootID = diskquota.IDOf(fi)
	if !readOnly {
		if r.quota, err = acquireQuota(root, dir, maxDisk); err != nil {
			return nil, errors.Join(err, root.Close())
		}
		r.release = sync.OnceFunc(func() { releaseQuota(r.quota, maxDisk) })
	}
	return r, nil
}

// view returns a rootFS on the same directory, and the same disk quota,
// with a budget of open files of its own (no file open): one instance's
// /data.
func (r *rootFS) view() *rootFS {
	return &rootFS{root: r.root, rootID: r.rootID, readOnly: r.readOnly, max: r.max, quota: r.quota, maxDisk: r.maxDisk}
}

// recount counts the directory afresh for its disk quota, unless a call
// writing there runs (see diskQuota.recount); done reports whether it did.
// A read-only rootFS has nothing to count.
func (r *rootFS) recount() (done bool, err error) {
	if r.quota == nil {
		return false, nil
	}
	return r.quota.recount(r.root.Name())
}

// enter records a call on the directory starting (see diskQuota.enter).
func (r *rootFS) enter() (end func(), err error) {
	if r.quota == nil {
		return func() {}, nil
	}
	return r.quota.enter(r.root.Name())
}

// diskUsed reports the bytes the directory's quota counts (0: read-only).
func (r *rootFS) diskUsed() int64 {
	if r.quota == nil {
		return 0
	}
	return r.quota.Used()
}

// quotaRefusals reports how many changes the disk quota refused through r.
func (r *rootFS) quotaRefusals() int64 { return r.refused.Load() }

// refuse counts a change refused for the disk quota and returns its errno.
func (r *rootFS) refuse() experimentalsys.Errno {
	r.refused.Add(1)
	return errnoQuota
}

// lockQuota takes the disk quota's lock, when there is a quota, and returns
// its unlock.
func (r *rootFS) lockQuota() func() {
	if r.quota == nil {
		return func() {}
	}
	r.quota.lock()
	return r.quota.unlock
}

// openFiles reports how many files are open through r.
func (r *rootFS) openFiles() int64 { return r.open.Load() }

// Close closes the directory, for r and every view of it, and gives its
// share of the disk quota back. Files the guest opened stay usable.
func (r *rootFS) Close() error {
	if r.release != nil {
		r.release()
	}
	return r.root.Close()
}

// String implements fmt.Stringer.
func (r *rootFS) String() string { return r.root.Name() }

// rootPath maps the path wazero passes to one the root accepts ("" is the
// directory itself). A path relative to a descriptor the guest opened on
// the directory itself comes as "/" + the path (wazero joins the
// descriptor's name, "", to it with a slash; a path the guest gives is
// never absolute, wazero refuses that one first): it names the same entry
// beneath the root.
func rootPath(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// writeFlags are the open flags that change the file system.
const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
	experimentalsys.O_TRUNC | experimentalsys.O_APPEND

// OpenFile implements experimentalsys.FS.
func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p = rootPath(p)
	if r.readOnly && flag&writeFlags != 0 {
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.EISDIR
		}
		return nil, experimentalsys.EROFS
	}
	excl := flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) == experimentalsys.O_CREAT|experimentalsys.O_EXCL
	if flag&experimentalsys.O_NOFOLLOW != 0 && !excl {
		// os.Root follows a final symbolic link (beneath the root); a guest
		// asking not to follow one gets ELOOP, as from open(2). A link made
		// between this check and the open is followed, beneath the root.
		if fi, err := r.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	if r.open.Add(1) > r.max {
		r.open.Add(-1)
		return nil, experimentalsys.EAGAIN
	}
	defer r.lockQuota()()
	created := false
	var parent int64 // what the directory to hold a new name counts before it
	if r.quota != nil && flag&experimentalsys.O_CREAT != 0 {
		// A new name counts against the quota: refused when there is
		// no room for it (what a name it follows a link to would make
		// is checked the same way).
		if _, err := r.root.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if r.quota.room() < entryBytes {
				r.open.Add(-1)
				return nil, r.refuse()
			}
			created, parent = true, r.parentBytes(p)
			if fi, err := r.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				parent = -1 // the name is made where the link leads: counted afresh
			}
		}
	}
	// O_TRUNC is left to below, once the file is known to be one that may
	// be changed: a hard link to a file outside is refused untouched, and
	// the bytes truncation frees are counted.
	f, err := r.root.OpenFile(p, osFlags(flag)&^os.O_TRUNC|syscall.O_NONBLOCK, perm&fs.ModePerm)
	if err != nil {
		r.open.Add(-1)
	}
	if errors.Is(err, syscall.ENXIO) {
		// A FIFO opened for writing without a reader, a device without
		// its driver, a socket: none is a regular file.
		return nil, experimentalsys.EACCES
	}
	if err != nil {
		return nil, errnoOf(err)
	}
	if r.quota != nil && created {
		r.quota.add(entryBytes)
		r.parentGrew(p, parent)
	}
	fi, err := f.Stat()
	st := sys.Stat_t{}
	if err == nil {
		st = sys.NewStat_t(fi)
	}
	switch {
	case err != nil:
	case !fi.Mode().IsRegular() && !fi.IsDir():
		err = syscall.EACCES // a FIFO, device or socket: refused
	case fi.Mode().IsRegular() && st.Nlink > 1:
		err = syscall.EACCES // a hard link someone else made: refused
	case fi.IsDir() && flag&experimentalsys.O_TRUNC != 0:
		err = syscall.EISDIR // as open(2) says
	}
	if err == nil && flag&experimentalsys.O_NONBLOCK == 0 {
		err = setFlag(f, syscall.O_NONBLOCK, false)
	}
	if err == nil && flag&experimentalsys.O_TRUNC != 0 {
		if err = f.Truncate(0); err == nil && r.quota != nil {
			if after, serr := f.Stat(); serr == nil {
				r.quota.add(diskquota.Content(after) - diskquota.Content(fi))
			} else {
				r.quota.d.InvalidateLocked()
			}
		}
	}
	if err != nil {
		_ = f.Close()
		r.open.Add(-1)
		return nil, errnoOf(err)
	}
	rf := newRootFile(f, fi, flag, r.readOnly, &r.open)
	if r.quota != nil && fi.Mode().IsRegular() {
		rf.quota, rf.refused = r.quota, &r.refused
		r.quota.d.Opened(fileID{Dev: st.Dev, Ino: st.Ino})
	}
	return rf, 0
}

// osFlags converts open flags to the os package's.
func osFlags(flag experimentalsys.Oflag) int {
	var f int
	switch {
	case flag&experimentalsys.O_RDWR != 0:
		f = os.O_RDWR
	case flag&experimentalsys.O_WRONLY != 0:
		f = os.O_WRONLY
	default:
		f = os.O_RDONLY
	}
	for _, m := range []struct {
		from experimentalsys.Oflag
		to   int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
		{experimentalsys.O_SYNC | experimentalsys.O_RSYNC, os.O_SYNC},
		{experimentalsys.O_DSYNC, syscall.O_DSYNC},
		{experimentalsys.O_DIRECTORY, syscall.O_DIRECTORY},
	} {
		if flag&m.from != 0 {
			f |= m.to
		}
	}
	return f
}

// Lstat implements experimentalsys.FS. A regular file with more than one
// hard link is refused (EACCES), as OpenFile refuses it: its size and times
// may be those of a file outside the directory (see status).
func (r *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Lstat(rootPath(p))
	return status(fi, err)
}

// Stat implements experimentalsys.FS, following a final symbolic link
// beneath the root; a regular file with more than one hard link is refused
// as Lstat refuses it.
func (r *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Stat(rootPath(p))
	return status(fi, err)
}

// status is what Stat and Lstat tell the guest of fi (err: the failure):
// nothing of a regular file with more than one hard link, a name someone
// else made for a file that may lie outside the directory (EACCES).
func status(fi os.FileInfo, err error) (sys.Stat_t, experimentalsys.Errno) {
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	st := sys.NewStat_t(fi)
	if fi.Mode().IsRegular() && st.Nlink > 1 {
		return sys.Stat_t{}, experimentalsys.EACCES
	}
	return st, 0
}

// parentBytes is what the directory that holds (or is to hold) the name p
// counts (diskquota.DirBytes), following symbolic links beneath the root;
// -1 without a quota or when it cannot be told.
func (r *rootFS) parentBytes(p string) int64 {
	if r.quota == nil {
		return -1
	}
	fi, err := r.root.Stat(parentOf(p))
	if err != nil || !fi.IsDir() {
		return -1
	}
	return diskquota.DirBytes(fi)
}

// parentGrew records what the directory holding the name p, which counted
// before (parentBytes) ahead of a name made or removed there, grew by; one
// that cannot be measured has the directory counted afresh before the next
// call. The caller holds the quota's lock.
func (r *rootFS) parentGrew(p string, before int64) {
	after := r.parentBytes(p)
	if before < 0 || after < 0 {
		r.quota.d.InvalidateLocked()
		return
	}
	r.quota.add(after - before)
}

// Readlink implements experimentalsys.FS.
func (r *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	dst, err := r.root.Readlink(rootPath(p))
	if err != nil {
		return "", errnoOf(err)
	}
	return dst, 0
}

// Mkdir implements experimentalsys.FS.
func (r *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	defer r.lockQuota()()
	if d, ok := r.depthOf(parentOf(rootPath(p))); ok && d+1 > maxDirDepth {
		return experimentalsys.ENAMETOOLONG
	}
	if r.quota != nil && r.quota.room() < entryBytes {
		return r.refuse()
	}
	parent := r.parentBytes(rootPath(p))
	errno := errnoOf(r.root.Mkdir(rootPath(p), perm&fs.ModePerm))
	if errno == 0 && r.quota != nil {
		made := int64(entryBytes)
		if fi, err := r.root.Lstat(rootPath(p)); err == nil && fi.IsDir() {
			made = diskquota.DirBytes(fi)
		}
		r.quota.add(made)
		r.parentGrew(rootPath(p), parent)
	}
	if errno == experimentalsys.ENOTDIR {
		errno = experimentalsys.ENOENT // a parent is missing (as wazero's own DirFS says)
	}
	return errno
}

// Chmod implements experimentalsys.FS: only the permission bits are set.
func (r *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Chmod(rootPath(p), perm&fs.ModePerm))
}

// Rename implements experimentalsys.FS.
func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	from, to = rootPath(from), rootPath(to)
	if from == to {
		return 0
	}
	defer r.lockQuota()()
	if fi, err := r.root.Lstat(from); err == nil && fi.IsDir() {
		if d, ok := r.depthOf(parentOf(to)); ok {
			// room: how many levels of directories may lie below it there
			if room := maxDirDepth - d - 1; room < 0 || r.nestedDeeper(from, room) {
				return experimentalsys.ENAMETOOLONG
			}
		}
	}
	var replaced os.FileInfo // what the rename replaces, released once it is gone
	if r.quota != nil {
		fromFi, ferr := r.root.Lstat(from)
		toFi, terr := r.root.Lstat(to)
		if ferr == nil && terr == nil && !os.SameFile(fromFi, toFi) {
			replaced = toFi
		}
	}
	parent := r.parentBytes(to)
	errno := errnoOf(r.root.Rename(from, to))
	if errno == 0 && replaced != nil {
		r.quota.d.Removed(replaced)
	}
	if errno == 0 && r.quota != nil {
		r.parentGrew(to, parent)
	}
	return errno
}

// Link implements experimentalsys.FS: hard links are refused (EPERM). A
// regular file with more than one link cannot be opened (see OpenFile),
// since a link someone else made may name a file outside the directory;
// the guest making its own would only lock itself out of its file.
func (r *rootFS) Link(_, _ string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

// Symlink implements experimentalsys.FS. The target is kept as written and
// resolved when the link is followed; one that is absolute or has a ".."
// component is refused (EPERM), so no link the guest makes can lead out of
// the directory, whoever follows it.
func (r *rootFS) Symlink(target, link string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	if errno := checkLinkTarget(target); errno != 0 {
		return errno
	}
	defer r.lockQuota()()
	// A link's target counts in whole blocks (diskquota.Content), as it is
	// once made.
	cost := entryBytes + diskquota.RoundUp(int64(len(target)))
	if r.quota != nil && r.quota.room() < cost {
		return r.refuse()
	}
	parent := r.parentBytes(rootPath(link))
	errno := errnoOf(r.root.Symlink(target, rootPath(link)))
	if errno == 0 && r.quota != nil {
		r.parentGrew(rootPath(link), parent)
		if fi, err := r.root.Lstat(rootPath(link)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			cost = entryBytes + diskquota.Content(fi)
		}
		r.quota.add(cost)
	}
	return errno
}

// checkLinkTarget refuses a symbolic link target that could climb out.
func checkLinkTarget(target string) experimentalsys.Errno {
	switch {
	case target == "" || strings.IndexByte(target, 0) >= 0:
		return experimentalsys.EINVAL
	case path.IsAbs(target):
		return experimentalsys.EPERM
	}
	for part := range strings.SplitSeq(target, "/") {
		if part == ".." {
			return experimentalsys.EPERM
		}
	}
	return 0
}

// Unlink implements experimentalsys.FS.
func (r *rootFS) Unlink(p string) experimentalsys.Errno {
	return r.removeAt(p, 0)
}

// Rmdir implements experimentalsys.FS.
func (r *rootFS) Rmdir(p string) experimentalsys.Errno {
	return r.removeAt(p, unix.AT_REMOVEDIR)
}

// removeAt removes the entry p names: its parent directory is opened
// through the root, then the last component is removed relative to it
// (unlinkat(2) follows no link in it), so a directory entry and only that
// one goes, and unlink never removes a directory nor rmdir a file.
func (r *rootFS) removeAt(p string, flags int) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	parent, base := path.Split(strings.TrimRight(rootPath(p), "/"))
	switch base {
	case "", ".":
		return experimentalsys.EINVAL
	case "..":
		return experimentalsys.ENOTEMPTY
	}
	if parent == "" {
		parent = "."
	}
	defer r.lockQuota()()
	var gone os.FileInfo // what is removed, released once it is gone
	held := r.parentBytes(path.Join(parent, base))
	if r.quota != nil {
		gone, _ = r.root.Lstat(path.Join(parent, base))
	}
	dir, err := r.root.OpenFile(parent, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return errnoOf(err)
	}
	defer dir.Close()
	rc, err := dir.SyscallConn()
	if err != nil {
		return errnoOf(err)
	}
	var uerr error
	if err := rc.Control(func(fd uintptr) {
		uerr = ignoringEINTR(func() error { return unix.Unlinkat(int(fd), base, flags) })
	}); err != nil {
		return errnoOf(err)
	}
	if uerr == nil && gone != nil {
		r.quota.d.Removed(gone)
		r.parentGrew(path.Join(parent, base), held)
	}
	return errnoOf(uerr)
}

// Utimens implements experimentalsys.FS: the times of the file p names,
// following a final symbolic link beneath the root. A regular file with
// more than one hard link is refused (EACCES), as OpenFile refuses it: the
// link may be someone else's, to a file outside the directory. (A rename
// another instance makes between the check and the change is not excluded:
// it needs such a link to be there already.)
func (r *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	p = rootPath(p)
	if fi, err := r.root.Stat(p); err == nil && fi.Mode().IsRegular() && sys.NewStat_t(fi).Nlink > 1 {
		return experimentalsys.EACCES
	}
	return errnoOf(r.root.Chtimes(p, timeOf(atim), timeOf(mtim)))
}

// timeOf converts a WASI time; UTIME_OMIT becomes the zero time, which
// Chtimes leaves unchanged.
func timeOf(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// errnoOf maps an error of the os package to the errno the guest sees. An
// os.Root refuses a path that would leave the directory (an absolute
// symbolic link, a ".." above it) with an error of its own that has no
// errno: that one, like any other without an errno, is EPERM.
func errnoOf(err error) experimentalsys.Errno {
	if err == nil || errors.Is(err, io.EOF) {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return experimentalsys.UnwrapOSError(en)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return experimentalsys.ENOENT
	case errors.Is(err, fs.ErrExist):
		return experimentalsys.EEXIST
	case errors.Is(err, fs.ErrClosed):
		return experimentalsys.EBADF
	case errors.Is(err, fs.ErrInvalid):
		return experimentalsys.EINVAL
	}
	return experimentalsys.EPERM
}

// ignoringEINTR retries f while it is interrupted by a signal.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

var _ experimentalsys.FS = (*rootFS)(nil)
