package diskquota

import (
	"io/fs"
	"os"
	"path"
)

// walk calls fn with the path and the Lstat of everything under rel inside
// root (rel itself first, as fs.WalkDir does), following no link. Unlike
// fs.WalkDir over root.FS() it takes any name the file system holds: io/fs
// refuses names that are not UTF-8, which Linux allows (and a WASM guest
// or a tool may make), and the whole count failed on one.
func walk(root *os.Root, rel string, fn func(p string, fi fs.FileInfo) error) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return err
	}
	if err := fn(rel, fi); err != nil || !fi.IsDir() {
		return err
	}
	f, err := root.Open(rel)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := walk(root, path.Join(rel, name), fn); err != nil {
			return err
		}
	}
	return nil
}
