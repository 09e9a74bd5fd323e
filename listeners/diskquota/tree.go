package diskquota

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/tetratelabs/wazero/sys"
)

// Tree is what a directory tree inside a counted directory counts, taken
// just before the tree is removed (CountTree), so that its removal can be
// recorded without counting the whole directory again (Dir.RemovedTree).
type Tree struct {
	// names counts the tree's names, its top directory included.
	names int64
	// links is what its symbolic links' targets count (Content).
	links int64
	// dirs is what its directories take past a block each (DirBytes).
	dirs int64
	// files are its regular files, by identity.
	files map[FileID]treeFile
}

// treeFile is one regular file of a Tree.
type treeFile struct {
	// names counts its names inside the tree; nlink all of them.
	names, nlink uint64
	// content is what its content counts (Content).
	content int64
}

// CountTree counts the tree at rel inside root (rel and everything under
// it), following no link.
func CountTree(root *os.Root, rel string) (Tree, error) {
	t := Tree{files: map[FileID]treeFile{}}
	err := walk(root, rel, func(p string, fi fs.FileInfo) error {
		t.names++
		switch {
		case fi.IsDir():
			t.dirs += DirBytes(fi) - EntryBytes
		case fi.Mode()&fs.ModeSymlink != 0:
			t.links += Content(fi)
		case fi.Mode().IsRegular():
			st := sys.NewStat_t(fi)
			id := FileID{Dev: st.Dev, Ino: st.Ino}
			f := t.files[id]
			f.names++
			f.nlink, f.content = st.Nlink, Content(fi)
			t.files[id] = f
		}
		return nil
	})
	if err != nil {
		return Tree{}, fmt.Errorf("counting a tree for the disk quota: %w", err)
	}
	return t, nil
}

// RemovedTree releases what the tree t counted, once it is gone: every
// name and link target, and the content of each regular file whose every
// name was in the tree — of one a writer holds open, all but one name now,
// and that name and the content at its last close (Closing), as Removed
// does. The caller holds the lock.
func (d *Dir) RemovedTree(t Tree) {
	n := t.names*EntryBytes + t.links + t.dirs
	for id, f := range t.files {
		switch {
		case f.names < f.nlink: // a name outside keeps the content
		case d.open[id] > 0:
			n -= EntryBytes // Closing releases one name's worth with the content
		default:
			n += f.content
		}
	}
	d.Add(-n)
}
