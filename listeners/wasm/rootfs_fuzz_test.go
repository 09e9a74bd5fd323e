package wasm

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// fuzzProgram reads a rootFS fuzz input: a layout of links and files, then
// operations on paths, each drawn from the input's bytes.
type fuzzProgram struct {
	b       []byte
	outside string // the test's own directory outside the root
}

func (p *fuzzProgram) next() int {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return int(c)
}

func (p *fuzzProgram) done() bool { return len(p.b) == 0 }

// fuzzNames are the path components paths are made of: the layout's
// names, those outside, one that is never there, the dot entries and an
// empty one.
var fuzzNames = []string{"a", "b", "l1", "l2", "l3", "f", "f2", "p", "secret", "sdir", "x", ".", "..", ""}

// path is a path of up to 7 components (maybe rooted, maybe ending in a
// slash), or up to 48 raw bytes of the input.
func (p *fuzzProgram) path() string {
	c := p.next()
	if c&0x80 != 0 {
		n := min(c&0x3f, 48, len(p.b))
		s := string(p.b[:n])
		p.b = p.b[n:]
		return s
	}
	parts := make([]string, c%8)
	for i := range parts {
		parts[i] = fuzzNames[p.next()%len(fuzzNames)]
	}
	s := strings.Join(parts, "/")
	if c&0x08 != 0 {
		s = "/" + s
	}
	if c&0x10 != 0 {
		s += "/"
	}
	return s
}

// target is a symbolic link target: relative ones that stay, climb a
// little or name other links, and absolute ones into the test's directory
// outside the root (never elsewhere on the host).
func (p *fuzzProgram) target() string {
	targets := []string{"a", "f", "l1", "a/b", "x", ".", "..", "../..", "../a", "../f2", "a/../..",
		p.outside, filepath.Join(p.outside, "secret"), filepath.Join(p.outside, "sdir")}
	return targets[p.next()%len(targets)]
}

// fuzzDepth is how deep the root lies in the test's directory: deeper than
// any path or link here can climb (a path has at most 16 ".." components;
// links, all inside the root, climb at most two levels each and there are
// none outside to chain), so that even a broken rootFS could only touch the
// test's own files.
const fuzzDepth = 32

// fuzzTree is the test's directory, top, and the directory fuzzDepth levels
// below it, made once per process (a deep mkdir costs): each run of the
// fuzz function makes its outside directory in top and its root in deep.
var fuzzTree struct {
	once      sync.Once
	top, deep string
	err       error
}

// fuzzDirs returns the fuzz tree, made on first use; TestMain removes it.
func fuzzDirs(t *testing.T) (top, deep string) {
	t.Helper()
	fuzzTree.once.Do(func() {
		if fuzzTree.top, fuzzTree.err = os.MkdirTemp("", "xmlpipe-rootfs-fuzz-"); fuzzTree.err != nil {
			return
		}
		fuzzTree.deep = filepath.Join(append([]string{fuzzTree.top}, strings.Split(strings.Repeat("d/", fuzzDepth-1)+"d", "/")...)...)
		fuzzTree.err = os.MkdirAll(fuzzTree.deep, 0o755)
	})
	if fuzzTree.err != nil {
		t.Fatal(fuzzTree.err)
	}
	return fuzzTree.top, fuzzTree.deep
}

// removeFuzzTree removes the fuzz tree, if one was made.
func removeFuzzTree() {
	if fuzzTree.top != "" {
		_ = os.RemoveAll(fuzzTree.top)
	}
}

// inodes returns the device and inode numbers of everything in dir (links
// not followed), dir included.
func inodes(t *testing.T, dir string) map[[2]uint64]bool {
	t.Helper()
	set := map[[2]uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		set[[2]uint64{uint64(st.Dev), uint64(st.Ino)}] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// FuzzRootFS runs random operations on random paths through rootFS over a
// random layout of links (climbing, absolute, chained, looping), files and
// a FIFO, and checks that nothing resolves outside the root: every file
// opened and every stat is of something inside, nothing outside changes,
// no content from outside is read, no link the guest makes may climb, and
// nothing blocks.
func FuzzRootFS(f *testing.F) {
	f.Add([]byte{0x01, 12, 0, 0x01, 2, 0})      // l1 -> outside/secret; open l1
	f.Add([]byte{0x01, 11, 4, 0x02, 2, 8})      // l1 -> outside; stat l1/secret
	f.Add([]byte{0x02, 7, 0, 0x03, 0, 3, 8, 0}) // a/l2 -> ../..; open a/l2/.. (climbs)
	f.Add([]byte{0x0b, 1, 2, 3, 4, 5, 6, 0, 0x02, 3, 0, 0x13, 2, 0, 0x07, 12, 0x02, 2, 4})
	f.Add([]byte("\x0d\x0b\x0c\x0a\x09\x08\x07\x01\x03\x01\x02\x06\x02\x02\x05\x01\x03"))
	f.Add([]byte("\x03\x00\x0a\x0b\x01\x88../../../../etc/passwd\x05\x02\x0a\x0a"))
	f.Add([]byte("\x07\x05\x04\x03\x02\x01\x00\x0b\x09\x02\x02\x03\x0b\x02\x09\x0b\x0a\x02\x02\x00"))
	f.Fuzz(func(t *testing.T, prog []byte) {
		top, deep := fuzzDirs(t)
		outside, err := os.MkdirTemp(top, "outside-")
		if err != nil {
			t.Fatal(err)
		}
		root, err := os.MkdirTemp(deep, "root-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(outside); _ = os.RemoveAll(root) })
		for _, d := range []string{filepath.Join(outside, "sdir"), filepath.Join(root, "a", "b")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &fuzzProgram{b: prog, outside: outside}
		// The layout, made on the host at fixed places (never through a
		// link): which links exist and where they lead, which files, and a
		// FIFO.
		layout := p.next()
		for i, l := range []string{"l1", "a/l2", "a/b/l3"} {
			if layout&(1<<i) != 0 {
				if err := os.Symlink(p.target(), filepath.Join(root, l)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, name := range []string{"f", "a/f2"} {
			if layout&(8<<i) != 0 {
				if err := os.WriteFile(filepath.Join(root, name), []byte("inside"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if layout&0x20 != 0 {
			if err := syscall.Mkfifo(filepath.Join(root, "p"), 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}
		before := slicesWithout(hostTree(t, top), root, top)
		rfs, err := openRootFS(root, layout&0x40 != 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer rfs.Close()
		inside := func(dev uint64, ino uint64) bool { return inodes(t, root)[[2]uint64{dev, ino}] }
		for ops := 0; !p.done() && ops < 32; ops++ {
			op := p.next() % 14
			path := p.path()
			switch op {
			case 0, 1, 2, 3: // open: read, directory, create, truncate for writing
				flag := []experimentalsys.Oflag{experimentalsys.O_RDONLY, experimentalsys.O_DIRECTORY,
					experimentalsys.O_RDWR | experimentalsys.O_CREAT, experimentalsys.O_WRONLY | experimentalsys.O_TRUNC}[op]
				if p.next()&1 != 0 {
					flag |= experimentalsys.O_NOFOLLOW
				}
				file, errno := rfs.OpenFile(path, flag, 0o644)
				if errno != 0 {
					continue
				}
				dev, _ := file.Dev()
				ino, _ := file.Ino()
				if !inside(dev, uint64(ino)) {
					t.Fatalf("open %q resolved outside the root", path)
				}
				if st, errno := file.Stat(); errno == 0 && !st.Mode.IsRegular() && !st.Mode.IsDir() {
					t.Fatalf("open %q gave a %s", path, st.Mode)
				}
				buf := make([]byte, 64)
				if n, _ := file.Read(buf); bytes.Contains(buf[:n], []byte("SECRET")) {
					t.Fatalf("open %q read the secret", path)
				}
				if flag&(experimentalsys.O_RDWR|experimentalsys.O_WRONLY) != 0 {
					_, _ = file.Write([]byte("fuzz"))
				}
				if isDir, _ := file.IsDir(); isDir {
					_, _ = file.Readdir(-1)
				}
				_ = file.Close()
			case 4, 5: // stat, lstat
				stat := rfs.Stat
				if op == 5 {
					stat = rfs.Lstat
				}
				if st, errno := stat(path); errno == 0 && !inside(st.Dev, uint64(st.Ino)) {
					t.Fatalf("stat %q resolved outside the root", path)
				}
			case 6:
				_, _ = rfs.Readlink(path)
			case 7:
				_ = rfs.Mkdir(path, 0o755)
			case 8:
				_ = rfs.Unlink(path)
			case 9:
				_ = rfs.Rmdir(path)
			case 10:
				_ = rfs.Rename(path, p.path())
			case 11:
				_ = rfs.Link(path, p.path())
			case 12:
				target := p.target()
				if p.next()&1 != 0 {
					target = p.path()
				}
				if rfs.Symlink(target, path) == 0 && (filepath.IsAbs(target) || strings.Contains("/"+target+"/", "/../")) {
					t.Fatalf("symlink %q -> %q was made", path, target)
				}
			case 13:
				_ = rfs.Chmod(path, 0o600)
				_ = rfs.Utimens(path, experimentalsys.UTIME_OMIT, 0)
			}
		}
		if after := slicesWithout(hostTree(t, top), root, top); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Fatalf("outside the root changed:\n%s\nwas\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
		if rfs.quota != nil { // every file is closed: the disk quota's count is what is there
			fresh, err := countDir(root)
			if err != nil {
				t.Fatal(err)
			}
			if got := rfs.diskUsed(); got != fresh {
				t.Fatalf("the disk quota counts %d bytes; the directory holds %d", got, fresh)
			}
		}
	})
}

// slicesWithout drops from a hostTree listing of base the entries of root
// (which the operations may change).
func slicesWithout(tree []string, root, base string) []string {
	rel, _ := filepath.Rel(base, root)
	out := tree[:0:0]
	for _, e := range tree {
		if e == rel+" d---------" || strings.HasPrefix(e, rel+"/") {
			continue
		}
		out = append(out, e)
	}
	return out
}
