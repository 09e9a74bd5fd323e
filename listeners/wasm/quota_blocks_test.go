package wasm

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// realDisk is the disk the tree under dir takes: the st_blocks of
// everything under it (dir itself excluded), each inode once.
func realDisk(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if !seen[st.Ino] {
			seen[st.Ino] = true
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDiskQuotaBoundsRealDisk: max_disk_bytes bounds the disk a guest's
// dir really takes, however the guest spends it: many 1-byte files (each
// a 4 KiB block on disk), one byte written far into a file (a sparse file
// counts its whole apparent size), a file grown by truncate. Before, 1-byte
// files counted 257 bytes each, so a 1 MiB quota let ~4,000 of them take
// ~16 MiB of blocks.
func TestDiskQuotaBoundsRealDisk(t *testing.T) {
	const q = 1 << 20
	tests := []struct {
		name  string
		steps []quotaStep
	}{
		{name: "many one-byte files", steps: []quotaStep{{do: "many", path: "/data/f", arg: "10000"}}},
		{name: "a sparse write then filling it", steps: []quotaStep{
			{do: "writeat", path: "/data/s", arg: strconv.Itoa(q-2*4096) + ":x", ok: true},
			{do: "many", path: "/data/f", arg: "10000"},
			{do: "writeat", path: "/data/s", arg: "4096:" + strings.Repeat("y", 9000), ok: true}, // a hole filled: counted already
		}},
		{name: "a truncate that grows then many files", steps: []quotaStep{
			{do: "write", path: "/data/a", arg: "x", ok: true},
			{do: "truncate", path: "/data/a", arg: strconv.Itoa(q / 2), ok: true},
			{do: "many", path: "/data/f", arg: "10000"},
			{do: "truncate", path: "/data/a", arg: strconv.Itoa(q)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: q, Timeout: time.Minute})
			for _, s := range tc.steps {
				r := runOp(t, m, s.do, s.path, s.arg)
				if s.do != "many" && r.OK != s.ok {
					t.Errorf("%s %s %.20s: ok = %v (%q), want %v", s.do, s.path, s.arg, r.OK, r.Error, s.ok)
				}
				if s.do == "many" && (r.OK || !r.refused(ioErr)) {
					t.Errorf("many files: %+v, want refused with %q before 10000", r, ioErr)
				}
			}
			real := realDisk(t, dir)
			t.Logf("real disk at the cap: %d bytes (max_disk_bytes %d)", real, q)
			if real > q {
				t.Errorf("the dir takes %d bytes of disk (st_blocks), past max_disk_bytes %d", real, q)
			}
			checkCount(t, m, dir, q)
		})
	}
}

// TestDiskQuotaCountsDirectoryGrowth: a directory holding many long names
// takes blocks of its own, kept after the names go; the figure counts them
// as they grow (it equals a fresh count), so a guest filling directories
// and emptying them again cannot take disk the figure does not see.
func TestDiskQuotaCountsDirectoryGrowth(t *testing.T) {
	const q = 4 << 20
	dir := t.TempDir()
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: q, Timeout: time.Minute})
	long := "/data/" + strings.Repeat("n", 200)
	for _, s := range []quotaStep{
		{do: "mkdir", path: "/data/d", ok: true},
		{do: "many", path: "/data/d/" + strings.Repeat("n", 200), arg: "200", ok: true},
		{do: "many", path: long, arg: "200", ok: true},
	} {
		if r := runOp(t, m, s.do, s.path, s.arg); r.OK != s.ok {
			t.Fatalf("%s %.20s: %+v", s.do, s.path, r)
		}
	}
	checkCount(t, m, dir, q)
}
