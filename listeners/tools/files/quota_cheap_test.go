package files

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// countingRoots makes countRoot count how often it runs (and run before,
// when set, first); the returned function reads the count.
func countingRoots(t *testing.T, before func()) func() int64 {
	t.Helper()
	var n atomic.Int64
	orig := countRoot
	t.Cleanup(func() { countRoot = orig })
	countRoot = func(dir string) (int64, error) {
		n.Add(1)
		if before != nil {
			before()
		}
		return orig(dir)
	}
	return n.Load
}

// TestDiskQuotaCountsOnce: in the steady state the root is counted once,
// at the listener's first write; writes, appends, deletes of files, links
// and whole trees after it each record what they changed, without counting
// the root again, and the figure stays what a count finds.
func TestDiskQuotaCountsOnce(t *testing.T) {
	root := t.TempDir()
	counts := countingRoots(t, nil)
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 1 << 20})}
	if err := os.MkdirAll(filepath.Join(root, "tree", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tree/x", "tree/sub/y"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(strings.Repeat("t", 700)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("x", filepath.Join(root, "tree", "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "tree", "x"), filepath.Join(root, "x2")); err != nil {
		t.Fatal(err)
	}
	steps := []Files{
		{Op: "write", Path: "a", Content: strings.Repeat("a", 3000)},
		{Op: "write", Path: "b", Content: "b"},
		{Op: "write", Path: "a", Content: "short"},
		{Op: "write", Path: "b", Content: strings.Repeat("b", 100), Append: true},
		{Op: "delete", Path: "b"},
		{Op: "write", Path: "c", Content: "c"},
		{Op: "delete", Path: "tree", Recursive: true}, // x2 keeps x's content
		{Op: "write", Path: "d", Content: "d"},
	}
	for i, p := range steps {
		if r := callTool(t, tool, p); r.Error != "" {
			t.Fatalf("step %d %+v: %s", i, p, r.Error)
		}
		want, err := diskquota.Count(root)
		if err != nil {
			t.Fatal(err)
		}
		d := rootDir(t, root)
		d.Lock()
		got := d.Used()
		d.Unlock()
		if got != want {
			t.Errorf("after step %d %+v the figure is %d; the root holds %d", i, p, got, want)
		}
	}
	if n := counts(); n != 1 {
		t.Errorf("the root was counted %d times, want once", n)
	}
}

// rootDir is the shared figure of the directory root.
func rootDir(t *testing.T, root string) *diskquota.Dir {
	t.Helper()
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := diskquota.DirOf(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDiskQuotaCountsOutsideTheLock: the count a would-be refusal makes
// holds no lock other writers need: while it walks the root, a write that
// fits goes through.
func TestDiskQuotaCountsOutsideTheLock(t *testing.T) {
	const q = 4 * block
	root := t.TempDir()
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: q})}
	if r := callTool(t, tool, Files{Op: "write", Path: "a", Content: strings.Repeat("a", 3000)}); r.Error != "" {
		t.Fatalf("write a: %+v", r)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	countingRoots(t, func() {
		if once.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
	})
	refused := make(chan *FilesResult, 1)
	go func() {
		refused <- callTool(t, tool, Files{Op: "write", Path: "big", Content: strings.Repeat("b", 3*block)})
	}()
	<-entered // the would-be refusal is counting the root
	wrote := make(chan *FilesResult, 1)
	go func() { wrote <- callTool(t, tool, Files{Op: "write", Path: "small", Content: "s"}) }()
	var small *FilesResult
	select {
	case small = <-wrote:
	case <-time.After(time.Minute):
		t.Error("a write that fits waited a minute for another's count")
	}
	close(release)
	if r := <-refused; !strings.Contains(r.Error, ErrDiskQuota.Error()) {
		t.Errorf("write big: %+v, want %q", r, ErrDiskQuota)
	}
	if small == nil {
		small = <-wrote
	}
	if small.Error != "" {
		t.Errorf("write small: %+v", small)
	}
}
