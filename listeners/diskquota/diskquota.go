// Package diskquota counts what a writable directory holds against a disk
// quota, the one way every sandbox that caps a directory counts it (the
// WASM sandbox's max_disk_bytes, the files tool's) so that the cap bounds
// the disk the directory takes: the content of its regular files and the
// targets of its symbolic links in whole blocks (Content: the size rounded
// up to BlockBytes, or the blocks the file system reports when more, so a
// sparse file counts in full; each inode once however many names it has),
// and EntryBytes — a block — for every name, a directory counting the
// blocks it takes when more (DirBytes).
package diskquota

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/tetratelabs/wazero/sys"
)

// EntryBytes is what each name in a capped directory (file, directory,
// symbolic link) counts besides its content: a block (BlockBytes), which
// covers its inode, its entry in its directory and an empty directory's
// block, so that a cap of N bytes holds at most N/EntryBytes names.
const EntryBytes = BlockBytes

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
			used += DirBytes(fi) - EntryBytes // the directory's own growth; it has no name here
			return nil
		}
		switch {
		case fi.IsDir():
			used += DirBytes(fi)
			return nil
		case fi.Mode()&fs.ModeSymlink != 0:
			used += Content(fi)
		case fi.Mode().IsRegular():
			if id := IDOf(fi); !seen[id] {
				seen[id] = true
				used += Content(fi)
			}
		}
		used += EntryBytes
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting its bytes for the disk quota: %w", err)
	}
	return used, nil
}
