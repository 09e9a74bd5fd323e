package diskquota

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openDir is the Dir of dir.
func openDir(t *testing.T, dir string) *Dir {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fi, err := r.Stat(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs.mu.Lock()
	delete(dirs.byID, IDOf(fi)) // a directory of an earlier test may have had its inode
	dirs.mu.Unlock()
	d, err := DirOf(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// used reads d's figure.
func used(d *Dir) int64 {
	d.Lock()
	defer d.Unlock()
	return d.Used()
}

// TestDirRecount: a count replaces the figure; one a change raced is made
// again (under the lock); a count made since the caller looked serves it;
// while a file is held open the figure is kept; a failed count keeps it.
func TestDirRecount(t *testing.T) {
	d := openDir(t, t.TempDir())
	calls := 0
	fixed := func(n int64) func() (int64, error) {
		return func() (int64, error) { calls++; return n, nil }
	}
	if !d.Stale() {
		t.Fatal("a Dir never counted is not stale")
	}
	if ok, err := d.Recount(d.Seq(), fixed(100)); !ok || err != nil || used(d) != 100 || d.Stale() {
		t.Fatalf("Recount = %v, %v; figure %d, stale %v; want true, nil, 100, false", ok, err, used(d), d.Stale())
	}
	// A change recorded while the walk runs: the walk is made again.
	calls = 0
	racing := func() (int64, error) {
		calls++
		if calls == 1 {
			d.Lock()
			d.Add(5)
			d.Unlock()
			return 200, nil
		}
		return 205, nil
	}
	if ok, err := d.Recount(d.Seq(), racing); !ok || err != nil || used(d) != 205 || calls != 2 {
		t.Fatalf("Recount raced = %v, %v; figure %d after %d walks; want true, nil, 205 after 2", ok, err, used(d), calls)
	}
	// A count made since seq serves the caller.
	seq := d.Seq()
	if _, err := d.Recount(seq, fixed(300)); err != nil {
		t.Fatal(err)
	}
	calls = 0
	if ok, err := d.Recount(seq, fixed(400)); !ok || err != nil || used(d) != 300 || calls != 0 {
		t.Fatalf("Recount after another = %v, %v; figure %d, %d walks; want true, nil, 300, 0", ok, err, used(d), calls)
	}
	// A file held open: kept.
	id := FileID{Dev: 1, Ino: 2}
	d.Lock()
	d.Opened(id)
	d.Unlock()
	if ok, err := d.Recount(d.Seq(), fixed(500)); ok || err != nil || used(d) != 300 {
		t.Fatalf("Recount with a file open = %v, %v; figure %d; want false, nil, 300", ok, err, used(d))
	}
	d.Lock()
	d.open[id] = 1
	delete(d.open, id)
	d.Unlock()
	// A failed count: kept, the error returned.
	boom := errors.New("boom")
	if ok, err := d.Recount(d.Seq(), func() (int64, error) { return 0, boom }); ok || !errors.Is(err, boom) || used(d) != 300 {
		t.Fatalf("failed Recount = %v, %v; figure %d; want false, boom, 300", ok, err, used(d))
	}
}

// TestDirStale: a figure is stale once marked (Invalidate, by the
// directory's path too) or older than MaxAge, and Fresh counts it then
// only.
func TestDirStale(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	count := func() (int64, error) { return Count(dir) }
	if err := d.Fresh(count); err != nil || used(d) != RoundUp(10)+EntryBytes {
		t.Fatalf("Fresh = %v, figure %d; want %d", err, used(d), RoundUp(10)+EntryBytes)
	}
	if err := os.WriteFile(filepath.Join(dir, "b"), make([]byte, 10), 0o644); err != nil { // by hand
		t.Fatal(err)
	}
	if err := d.Fresh(count); err != nil || used(d) != RoundUp(10)+EntryBytes {
		t.Fatalf("Fresh of a fresh figure = %v, figure %d; want it kept (%d)", err, used(d), RoundUp(10)+EntryBytes)
	}
	Invalidate(filepath.Join(dir, ".")) // as run_command names a root
	if err := d.Fresh(count); err != nil || used(d) != 2*(RoundUp(10)+EntryBytes) {
		t.Fatalf("Fresh after Invalidate = %v, figure %d; want %d", err, used(d), 2*(RoundUp(10)+EntryBytes))
	}
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	d.Lock()
	d.countedAt = time.Now().Add(-MaxAge - time.Second)
	d.Unlock()
	if err := d.Fresh(count); err != nil || used(d) != RoundUp(10)+EntryBytes {
		t.Fatalf("Fresh of an old figure = %v, figure %d; want %d", err, used(d), RoundUp(10)+EntryBytes)
	}
	Invalidate(filepath.Join(dir, "missing")) // nothing to mark, no panic
}

// TestRemovedTree: a tree removed releases its names, link targets and
// the content of the files all of whose names it held, not of one with a
// name outside it nor of one held open.
func TestRemovedTree(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"t", "t/sub"} {
		if err := os.Mkdir(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"t/a", "t/sub/b", "t/open"} {
		if err := os.WriteFile(filepath.Join(dir, p), make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "t/a"), filepath.Join(dir, "t/a2")); err != nil { // both inside
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "t/sub/b"), filepath.Join(dir, "b-outside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "t/l")); err != nil {
		t.Fatal(err)
	}
	d := openDir(t, dir)
	if _, err := d.Recount(d.Seq(), func() (int64, error) { return Count(dir) }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "t/open"))
	if err != nil {
		t.Fatal(err)
	}
	d.Lock()
	d.Opened(IDOf(fi))
	d.Unlock()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tree, err := CountTree(r, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveAll("t"); err != nil {
		t.Fatal(err)
	}
	d.Lock()
	d.RemovedTree(tree)
	d.Unlock()
	want, err := Count(dir)
	if err != nil {
		t.Fatal(err)
	}
	want += EntryBytes + RoundUp(1000) // t/open, removed but open: released at its last close
	if got := used(d); got != want {
		t.Errorf("after the tree went the figure is %d, want %d", got, want)
	}
	if _, err := CountTree(r, "missing"); err == nil {
		t.Error("CountTree of a missing tree: no error")
	}
}

// TestDirFreshAfterAFailedCount: a stale figure whose count failed is not
// walked again until RetryAfter has passed: Fresh reports the failure.
func TestDirFreshAfterAFailedCount(t *testing.T) {
	d := openDir(t, t.TempDir())
	boom := errors.New("boom")
	walks := 0
	failing := func() (int64, error) { walks++; return 0, boom }
	for range 3 {
		if err := d.Fresh(failing); !errors.Is(err, boom) {
			t.Fatalf("Fresh = %v, want boom", err)
		}
	}
	if walks != 1 {
		t.Errorf("%d walks within RetryAfter of a failed one, want 1", walks)
	}
	d.Lock()
	d.failedAt = time.Now().Add(-RetryAfter)
	d.Unlock()
	if err := d.Fresh(func() (int64, error) { walks++; return 7, nil }); err != nil || used(d) != 7 || walks != 2 {
		t.Errorf("Fresh after RetryAfter = %v, figure %d after %d walks; want nil, 7, 2", err, used(d), walks)
	}
}

// TestDirOfARecreatedDirectory: a directory removed and made again — under
// its path, with the inode of the old one (simulated: the identity the
// old one had) — starts from a fresh count, not from the old figure; and
// Invalidate of the new one does not reach the old one's figure.
func TestDirOfARecreatedDirectory(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := openDir(t, dir)
	if ok, err := old.Recount(old.Seq(), func() (int64, error) { return 1000, nil }); !ok || err != nil {
		t.Fatalf("Recount = %v, %v", ok, err)
	}
	oldFI, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	oldID := IDOf(oldFI)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	identify = func(fs.FileInfo) FileID { return oldID } // the inode reused
	t.Cleanup(func() { identify = IDOf })
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := DirOf(r)
	if err != nil {
		t.Fatal(err)
	}
	if d == old {
		t.Fatal("the recreated directory got the removed one's Dir")
	}
	if !d.Stale() || used(d) != 0 {
		t.Fatalf("the recreated directory's figure: stale %v, %d bytes; want stale, 0", d.Stale(), used(d))
	}
	again, err := DirOf(r)
	if err != nil || again != d {
		t.Fatalf("DirOf again = %p, %v; want the same Dir %p", again, err, d)
	}
}
