package wasm

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPathsRelativeToTheOpenedDir: a guest that opens /data itself and
// works relative to that descriptor (os.OpenRoot, or os.ReadDir stat'ing an
// entry whose type WASI cannot name, as a FIFO) reaches the directory's
// entries. wazero names such a path "/" + the entry, which os.Root
// refused as absolute: every one of these failed with EPERM.
func TestPathsRelativeToTheOpenedDir(t *testing.T) {
	base, dir := sandboxLayout(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	outside := hostTree(t, filepath.Join(base, "outside"))
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, Timeout: time.Minute})
	for _, tc := range []struct {
		do, path, arg string
		want          opResult
	}{
		{"list", "/data", "", opResult{OK: true, Result: "abs,fifo,hello.txt,hostetc,sub,up"}},
		{"inroot", "/data", "read:hello.txt", opResult{OK: true, Result: "inside"}},
		{"inroot", "/data", "stat:hello.txt", opResult{OK: true, Result: "---------- 6"}},
		{"inroot", "/data", "write:new.txt:made", opResult{OK: true}},
		{"inroot", "/data", "read:new.txt", opResult{OK: true, Result: "made"}},
		{"inroot", "/data", "mkdir:made", opResult{OK: true}},
		{"inroot", "/data", "list:.", opResult{OK: true, Result: "abs,fifo,hello.txt,hostetc,made,new.txt,sub,up"}},
		{"inroot", "/data", "remove:new.txt", opResult{OK: true}},
		{"inroot", "/data", "remove:made", opResult{OK: true}},
		{"inroot", "/data", "read:sub/in", opResult{OK: true, Result: "inside"}},
		// Still beneath the directory: the links out are not followed.
		{"inroot", "/data/sub", "read:in", opResult{Error: "openat in: path escapes from parent"}},
		{"inroot", "/data", "read:up", opResult{Error: "openat up: path escapes from parent"}},
		{"inroot", "/data", "read:abs/passwd", opResult{Error: "openat abs/passwd: path escapes from parent"}},
	} {
		got := runOp(t, m, tc.do, tc.path, tc.arg)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s %s (-want +got):\n%s", tc.do, tc.path, tc.arg, diff)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt still there on the host: %v", err)
	}
	if diff := cmp.Diff(outside, hostTree(t, filepath.Join(base, "outside"))); diff != "" {
		t.Errorf("outside changed (-before +after):\n%s", diff)
	}
}
