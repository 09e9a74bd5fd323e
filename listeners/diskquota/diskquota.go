// Package diskquota counts what a writable directory holds against a disk
// quota, the one way every sandbox that caps a directory counts it (the
// WASM sandbox's max_disk_bytes, the files tool's): the content of its
// regular files (their size, so a sparse file counts in full, and each
// inode once however many names it has), the targets of its symbolic links,
// and EntryBytes for every name.
package diskquota

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/tetratelabs/wazero/sys"
)

// EntryBytes is what each name in a capped directory (file, directory,
// symbolic link) counts besides its content: about an inode, so that making
// empty files or directories by the million runs out of quota before the
// host runs out of inodes.
const EntryBytes = 256

// FileID identifies a file on the host: its device and inode.
type FileID struct {
	Dev uint64
	Ino sys.Inode
}

// IDOf is the identity of the file fi describes (zero where the platform
// has none).
func IDOf(fi fs.FileInfo) FileID {
	st := sys.NewStat_t(fi)
	return FileID{st.Dev, st.Ino}
}

// Count counts the bytes under dir (not dir itself), as the package
// describes. dir may be named through a symbolic link; it is opened as an
// os.Root and walked inside it, so no link under it is followed.
func Count(dir string) (int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, fmt.Errorf("counting its bytes for the disk quota: %w", err)
	}
	defer root.Close()
	var used int64
	seen := map[FileID]bool{}
	err = walk(root, ".", func(p string, fi fs.FileInfo) error {
		if p == "." {
			return nil
		}
		used += EntryBytes
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			used += fi.Size()
		case fi.Mode().IsRegular():
			if id := IDOf(fi); !seen[id] {
				seen[id] = true
				used += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting its bytes for the disk quota: %w", err)
	}
	return used, nil
}
