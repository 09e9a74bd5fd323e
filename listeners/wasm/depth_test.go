package wasm

import (
	"strings"
	"testing"
	"time"
)

// TestDirectoriesNestAtMostMaxDirDepth: a guest cannot nest directories
// deeper than maxDirDepth below /data — by mkdir, through a symbolic link
// to a deep path, or by renaming a directory deeper. Every walk of the
// directory (the disk quota's count at each reload and each minute, a path
// resolved through os.Root) costs its depth per entry: a chain of 4 000
// directories, 1 MiB of quota, made each count take nearly two minutes.
func TestDirectoriesNestAtMostMaxDirDepth(t *testing.T) {
	dir := t.TempDir()
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, Timeout: time.Minute})
	deep := "/data"
	for i := 1; i <= maxDirDepth; i++ {
		deep += "/d"
		if r := runOp(t, m, "mkdir", deep, ""); !r.OK {
			t.Fatalf("mkdir at depth %d: %+v", i, r)
		}
	}
	rel := strings.TrimPrefix(deep, "/data/")  // maxDirDepth levels
	shallower := strings.TrimSuffix(rel, "/d") // one fewer
	for _, tc := range []struct {
		do, path, arg string
		ok            bool
	}{
		{"mkdir", deep + "/past", "", false},
		{"write", deep + "/file", "a file at the deepest level", true},
		{"symlink", "/data/shortcut", rel, true},
		{"mkdir", "/data/shortcut/past", "", false},
		{"mkdir", "/data/t", "", true},
		{"mkdir", "/data/t/u", "", true},
		{"rename", "/data/t", "/data/" + shallower + "/t", false}, // u would be at maxDirDepth + 1
		{"rename", "/data/t/u", "/data/" + shallower + "/u", true},
		{"rename", "/data/t", "/data/t2", true},
	} {
		r := runOp(t, m, tc.do, tc.path, tc.arg)
		if r.OK != tc.ok || (!tc.ok && !r.refused("file name too long")) {
			t.Errorf("%s %s %s: %+v, want ok %v (else: file name too long)", tc.do, tc.path, tc.arg, r, tc.ok)
		}
	}
}
