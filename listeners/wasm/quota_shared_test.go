package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDiskQuotaSharedByDir: modules writing to one directory (by its
// device and inode, whatever the path that names it) share one count, and
// the smallest quota among them bounds every writer; the count is released
// when the last of them closes.
func TestDiskQuotaSharedByDir(t *testing.T) {
	big := func(n int) string { return strings.Repeat("x", n) }
	type writer struct {
		quota int
		link  bool // names the directory through a symbolic link
	}
	type write struct {
		by   int // which writer
		path string
		n    int
		ok   bool
	}
	tests := []struct {
		name    string
		writers []writer
		writes  []write
		closeBy int // a writer closed after the writes (-1: none), then what follows
		after   []write
		sizes   map[string]int64
	}{
		{name: "two modules on one dir count it once",
			writers: []writer{{quota: 8 * block}, {quota: 8 * block}},
			writes:  []write{{0, "/data/a", 5 * block, true}, {1, "/data/b", 5 * block, false}},
			closeBy: -1,
			sizes:   map[string]int64{"a": 5 * block, "b": block}},
		{name: "the same dir through a symbolic link",
			writers: []writer{{quota: 8 * block}, {quota: 8 * block, link: true}},
			writes:  []write{{1, "/data/a", 5 * block, true}, {0, "/data/b", 5 * block, false}},
			closeBy: -1,
			sizes:   map[string]int64{"a": 5 * block, "b": block}},
		{name: "the smallest quota bounds every writer until its module closes",
			writers: []writer{{quota: 16 * block}, {quota: 4 * block}},
			writes:  []write{{0, "/data/a", 5 * block, false}},
			closeBy: 1,
			after:   []write{{0, "/data/b", 5 * block, true}},
			sizes:   map[string]int64{"a": 3 * block, "b": 5 * block}},
		{name: "a module closed leaves the count to the other",
			writers: []writer{{quota: 8 * block}, {quota: 8 * block}},
			writes:  []write{{0, "/data/a", 5 * block, true}},
			closeBy: 0,
			after:   []write{{1, "/data/b", 3 * block, false}},
			sizes:   map[string]int64{"a": 5 * block, "b": block}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("d", filepath.Join(base, "l")); err != nil {
				t.Fatal(err)
			}
			var ms []*Module
			for _, w := range tc.writers {
				d := dir
				if w.link {
					d = filepath.Join(base, "l")
				}
				ms = append(ms, compileGuest(t, "ops", Reactor,
					Sandbox{Dir: d, DirWritable: true, MaxDiskBytes: w.quota, Timeout: time.Minute}))
			}
			do := func(ws []write) {
				t.Helper()
				for _, w := range ws {
					if r := runOp(t, ms[w.by], "write", w.path, big(w.n)); r.OK != w.ok {
						t.Errorf("writer %d: write %s: ok = %v (%q), want %v", w.by, w.path, r.OK, r.Error, w.ok)
					}
				}
			}
			do(tc.writes)
			if tc.closeBy >= 0 {
				if err := ms[tc.closeBy].Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			do(tc.after)
			if diff := cmp.Diff(tc.sizes, hostSizes(t, dir)); diff != "" {
				t.Errorf("the directory's files (-want +got):\n%s", diff)
			}
			for i, m := range ms {
				if i != tc.closeBy {
					checkCount(t, m, dir, 16*block)
				}
			}
		})
	}
}

// TestDiskQuotaReleased: once every module writing to a directory is
// closed, its count is forgotten: a module opened on it afterwards counts
// it afresh, files added by hand in between included.
func TestDiskQuotaReleased(t *testing.T) {
	dir := t.TempDir()
	sb := Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: 4 * block, Timeout: time.Minute}
	a := compileGuest(t, "ops", Reactor, sb)
	b := compileGuest(t, "ops", Reactor, sb)
	if r := runOp(t, a, "write", "/data/a", "0123456789"); !r.OK {
		t.Fatalf("write: %q", r.Error)
	}
	for _, m := range []*Module{a, b} {
		if err := m.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "by-hand"), []byte(strings.Repeat("x", 3000)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := compileGuest(t, "ops", Reactor, sb)
	checkCount(t, c, dir, 4*block)
	if r := runOp(t, c, "write", "/data/b", strings.Repeat("x", 1000)); r.OK || !r.refused(ioErr) {
		t.Errorf("a write past what is left: %+v, want %q", r, ioErr)
	}
}

// TestDiskQuotaRecount: RecountDisk counts the directory afresh (files
// added or removed by hand included) when no guest writing there runs, and
// keeps the count while one does.
func TestDiskQuotaRecount(t *testing.T) {
	tests := []struct {
		name    string
		running bool // a guest of the other module on the dir runs meanwhile
		want    bool // recounted
	}{
		{name: "no guest running", want: true},
		{name: "a guest running", running: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sb := Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: 1 << 20, Timeout: 10 * time.Minute}
			m := compileGuest(t, "ops", Reactor, sb)
			other := compileGuest(t, "ops", Reactor, sb)
			if r := runOp(t, m, "write", "/data/a", "0123456789"); !r.OK {
				t.Fatalf("write: %q", r.Error)
			}
			counted := m.dir.diskUsed()
			if err := os.WriteFile(filepath.Join(dir, "by-hand"), []byte(strings.Repeat("x", 3000)), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			if tc.running {
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					_, err := other.Call(ctx, []byte("<Ops><Do>spin</Do></Ops>"))
					done <- err
				}()
				defer func() {
					cancel()
					select {
					case err := <-done:
						if !errors.Is(err, context.Canceled) {
							t.Errorf("the spinning guest: %v, want context.Canceled", err)
						}
					case <-time.After(time.Minute):
						t.Error("the spinning guest still runs a minute after it was cancelled")
					}
				}()
				for deadline := time.Now().Add(30 * time.Second); len(other.slots) == 0; { // the call holds a slot
					if time.Now().After(deadline) {
						t.Fatal("the call never started")
					}
					time.Sleep(time.Millisecond)
				}
			}
			got, err := m.RecountDisk()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("RecountDisk = %v, want %v", got, tc.want)
			}
			if !tc.want {
				if used := m.dir.diskUsed(); used != counted {
					t.Errorf("while a guest runs the count went from %d to %d, want it kept", counted, used)
				}
				return
			}
			checkCount(t, m, dir, 1<<20)
			checkCount(t, other, dir, 1<<20)
		})
	}
}

// TestDiskQuotaCountsADirNamedThroughALink: a dir configured as a symbolic
// link to a directory is counted with what it holds: the count walked the
// link as a leaf and found nothing, so the guest could add a full quota on
// top of what was there.
func TestDiskQuotaCountsADirNamedThroughALink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(base, "l")); err != nil {
		t.Fatal(err)
	}
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: filepath.Join(base, "l"), DirWritable: true, MaxDiskBytes: 3 * block, Timeout: time.Minute})
	if r := runOp(t, m, "write", "/data/new", strings.Repeat("x", 2000)); r.OK {
		t.Errorf("write of 2000 bytes beside 3000 under a three-block quota: %+v, want it refused", r)
	}
	checkCount(t, m, dir, 3*block)
}
