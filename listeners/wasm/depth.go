package wasm

import (
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
)

// maxDirDepth bounds how deep a guest nests directories below /data: a
// directory it makes (Mkdir) or moves (Rename, with what it holds) lies at
// most maxDirDepth levels down, else ENAMETOOLONG. os.Root resolves every
// path the guest names one component at a time, so each of its operations
// costs the depth of its path, and the disk quota's count (at every reload
// and every minute) holds a descriptor per level; before the count looked
// entries up by name in their own directory, a guest's chain of 4 000
// levels, within 1 MiB of quota, made each count take nearly two minutes.
// Depths are those on the host, once symbolic links are followed, so a link
// to a deep path does not let the guest past it. Trees the host already
// holds are not limited.
const maxDirDepth = 64

// parentOf is the directory holding the entry p names ("." for one at the
// top), p as rootPath gives it.
func parentOf(p string) string {
	return path.Dir(strings.TrimRight(p, "/"))
}

// depthOf reports how many levels below the root the directory rel lies,
// following symbolic links beneath the root (0: the root itself); at most
// maxDirDepth+1 levels are climbed, so a deeper one reads maxDirDepth+1.
// ok is false when rel is no directory the guest reaches: the operation
// itself then says why.
func (r *rootFS) depthOf(rel string) (depth int, ok bool) {
	f, err := r.root.OpenFile(rel, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	if err := rc.Control(func(start uintptr) {
		fd := int(start)
		defer func() {
			if fd != int(start) {
				_ = unix.Close(fd)
			}
		}()
		for ok = true; depth <= maxDirDepth; depth++ {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil {
				ok = false
				return
			}
			// (Dev and Ino are of other types on other platforms.)
			if (diskquota.FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}) == r.rootID {
				return
			}
			var up int
			err := ignoringEINTR(func() (err error) {
				up, err = unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				return err
			})
			if fd != int(start) { // a parent opened here: done with it
				_ = unix.Close(fd)
				fd = int(start)
			}
			if err != nil {
				ok = false
				return
			}
			fd = up
		}
	}); err != nil {
		return 0, false
	}
	return depth, ok
}

// nestedDeeper reports whether the directory rel holds directories more
// than room levels below it (room 0: any subdirectory at all). Only the
// first room+1 levels are read; an entry that cannot be read counts as
// none (it changed meanwhile).
func (r *rootFS) nestedDeeper(rel string, room int) bool {
	dir, err := r.root.OpenRoot(rel)
	if err != nil {
		return false
	}
	defer dir.Close()
	return nestedDeeper(dir, room)
}

func nestedDeeper(dir *os.Root, room int) bool {
	f, err := dir.Open(".")
	if err != nil {
		return false
	}
	names, _ := f.Readdirnames(-1)
	_ = f.Close()
	for _, name := range names {
		if fi, err := dir.Lstat(name); err != nil || !fi.IsDir() {
			continue
		}
		if room == 0 {
			return true
		}
		sub, err := dir.OpenRoot(name)
		if err != nil {
			continue
		}
		deeper := nestedDeeper(sub, room-1)
		_ = sub.Close()
		if deeper {
			return true
		}
	}
	return false
}
