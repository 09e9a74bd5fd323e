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
//
// Each directory is opened as an os.Root of its own, from its parent's,
// and its entries looked up by name in it: os.Root resolves a path one
// component at a time from the top, so looking each entry up by its path
// cost its depth, and a chain of directories the square of its length.
// One descriptor is open per level of the directory being read.
func walk(root *os.Root, rel string, fn func(p string, fi fs.FileInfo) error) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return err
	}
	if err := fn(rel, fi); err != nil || !fi.IsDir() {
		return err
	}
	dir, err := root.OpenRoot(rel)
	if err != nil {
		return err
	}
	defer dir.Close()
	return walkIn(dir, rel, fn)
}

// walkIn calls fn for everything under the directory dir, whose path is p,
// as walk does.
func walkIn(dir *os.Root, p string, fn func(p string, fi fs.FileInfo) error) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		fi, err := dir.Lstat(name)
		if err != nil {
			return err
		}
		child := path.Join(p, name)
		if err := fn(child, fi); err != nil {
			return err
		}
		if !fi.IsDir() {
			continue
		}
		sub, err := dir.OpenRoot(name)
		if err != nil {
			return err
		}
		err = walkIn(sub, child, fn)
		_ = sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
