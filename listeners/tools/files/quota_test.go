package files

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// callTool runs p through tool, as one listener does call after call.
func callTool(t testing.TB, tool *Tool, p Files) *FilesResult {
	t.Helper()
	resp, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*xmlpipe.RespondResponse).Payload.(*FilesResult)
}

// TestDiskQuota: a root's total (its files' sizes and link targets in
// whole blocks, and diskquota.EntryBytes — a block — a name, as the WASM
// sandbox counts) is capped at max_disk_bytes: a write or an append that
// would pass it is refused as the result's error, nothing written;
// overwriting within it is allowed, and so is every delete, which frees
// what it removes.
func TestDiskQuota(t *testing.T) {
	const q = 8 * block
	root := t.TempDir()
	name := filepath.Base(root)
	c := tools.Config{AllowedPaths: []string{root}, MaxBytes: q, MaxDiskBytes: q}
	tool := &Tool{Policy: tools.Fixed(c)}
	refused := func(path string, at, used int) string {
		return "files: over the disk quota: writing " + name + "/" + path + " would make root " + name + " hold " +
			strconv.Itoa(at) + " bytes (max_disk_bytes " + strconv.Itoa(q) + ", " + strconv.Itoa(used) +
			" used; a file counts its size in whole " + strconv.Itoa(block) + "-byte blocks, each name a block more): " +
			"delete something first"
	}
	steps := []struct {
		p       Files
		wantErr string
	}{
		{Files{Op: "write", Path: "a", Content: strings.Repeat("a", 3000)}, ""},
		// b's 5 blocks and a byte count 6 blocks, and its name one more.
		{Files{Op: "write", Path: "b", Content: strings.Repeat("b", 5*block+1)}, refused("b", 9*block, 2*block)},
		{Files{Op: "write", Path: "b", Content: strings.Repeat("b", 5*block)}, ""},
		{Files{Op: "write", Path: "b", Content: strings.Repeat("b", 100), Append: true}, refused("b", 9*block, 8*block)},
		// Overwriting a within the cap (at the cap) is allowed.
		{Files{Op: "write", Path: "a", Content: strings.Repeat("a", block)}, ""},
		{Files{Op: "write", Path: "c", Content: ""}, refused("c", 9*block, 8*block)},
		// Shrinking is allowed at the cap, and frees whole blocks.
		{Files{Op: "write", Path: "b", Content: "b"}, ""},
		{Files{Op: "write", Path: "c", Content: "c"}, ""},
		{Files{Op: "delete", Path: "b"}, ""},
		{Files{Op: "delete", Path: "c"}, ""},
		{Files{Op: "write", Path: "d", Content: strings.Repeat("d", 5*block)}, ""},
	}
	for i, s := range steps {
		r := callTool(t, tool, s.p)
		if diff := cmp.Diff(s.wantErr, r.Error); diff != "" {
			t.Fatalf("step %d (%s %s, %d bytes, append %v): error (-want +got):\n%s", i+1, s.p.Op, s.p.Path,
				len(s.p.Content), s.p.Append, diff)
		}
		if s.wantErr != "" && strings.Contains(r.Error, root) {
			t.Fatalf("step %d: the error shows a host path: %s", i+1, r.Error)
		}
	}
	want := map[string]int{"a": block, "d": 5 * block}
	got := map[string]int{}
	es, _ := os.ReadDir(root)
	for _, de := range es {
		b, _ := os.ReadFile(filepath.Join(root, de.Name()))
		got[de.Name()] = len(b)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the root holds (-want +got):\n%s", diff)
	}
}

// TestDiskQuotaOverAtStart: a root already holding more than
// max_disk_bytes (the operator's files) refuses every write that grows
// it, allows deletes, shrinking writes and, once under the cap again,
// writes that fit; the quota is counted when a listener first writes.
func TestDiskQuotaOverAtStart(t *testing.T) {
	const q = 4 * block
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "old", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"old/x", "old/deep/y"} {
		if err := os.WriteFile(filepath.Join(root, f), make([]byte, 3000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: q})}
	if r := callTool(t, tool, Files{Op: "write", Path: "new", Content: "n"}); !strings.Contains(r.Error, ErrDiskQuota.Error()) {
		t.Fatalf("write over the quota: %+v, want %q", r, ErrDiskQuota)
	}
	if r := callTool(t, tool, Files{Op: "delete", Path: "old", Recursive: true}); r.Error != "" {
		t.Fatalf("delete over the quota: %+v", r)
	}
	if r := callTool(t, tool, Files{Op: "write", Path: "new", Content: "n"}); r.Error != "" {
		t.Fatalf("write after the delete: %+v", r)
	}
	// A read-only listener is never refused for the quota: it writes nothing.
	ro := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 1, ReadOnly: true})}
	if r := callTool(t, ro, Files{Op: "read", Path: "new"}); r.Error != "" || r.Content != "n" {
		t.Fatalf("read-only read: %+v", r)
	}
}

// TestDiskQuotaRace: concurrent writes, through one listener or several
// sharing a root, cannot pass the cap together: exactly as many fit as
// the quota holds, and the root holds no more.
func TestDiskQuotaRace(t *testing.T) {
	const q, size = 256 << 10, 1000
	root := t.TempDir()
	c := tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: q}
	tools2 := []*Tool{{Policy: tools.Fixed(c)}, {Policy: tools.Fixed(c)}}
	var ok atomic.Int64
	var wg sync.WaitGroup
	content := strings.Repeat("x", size)
	for i := range 200 {
		wg.Go(func() {
			r := callTool(t, tools2[i%2], Files{Op: "write", Path: "f" + strconv.Itoa(i), Content: content})
			switch {
			case r.Error == "":
				ok.Add(1)
			case !strings.Contains(r.Error, ErrDiskQuota.Error()):
				t.Errorf("write f%d: %s", i, r.Error)
			}
		})
	}
	wg.Wait()
	if want := q / (diskquota.RoundUp(size) + diskquota.EntryBytes); ok.Load() != want {
		t.Errorf("%d writes succeeded, want %d", ok.Load(), want)
	}
	if used, err := diskquota.Count(root); err != nil || used > q {
		t.Errorf("the root holds %d bytes (%v), over the %d-byte quota", used, err, q)
	}
}

// TestDiskQuotaRootThroughALink: a root configured as a symbolic link to a
// directory is counted with what the directory holds.
func TestDiskQuotaRootThroughALink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "real")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(base, "notes")); err != nil {
		t.Fatal(err)
	}
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{filepath.Join(base, "notes")}, MaxDiskBytes: 4 * block})}
	if r := callTool(t, tool, Files{Op: "write", Path: "new", Content: strings.Repeat("x", 3*block)}); !strings.Contains(r.Error, ErrDiskQuota.Error()) {
		t.Fatalf("write of three blocks beside 3000 bytes under a four-block quota: %+v, want %q", r, ErrDiskQuota)
	}
	if r := callTool(t, tool, Files{Op: "write", Path: "new", Content: strings.Repeat("x", 500)}); r.Error != "" {
		t.Fatalf("write of 500 bytes: %+v", r)
	}
}

// TestDeleteWhenTheRootCannotBeCounted: a root that cannot be counted (an
// unreadable directory inside it) refuses writes with the reason, host
// path unshown, but deletes are allowed all the same.
func TestDeleteWhenTheRootCannotBeCounted(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(f func(string) (int64, error)) { countRoot = f }(countRoot)
	countRoot = func(string) (int64, error) {
		return 0, &fs.PathError{Op: "open", Path: filepath.Join(root, "locked"), Err: fs.ErrPermission}
	}
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}})}
	want := "files: counting " + filepath.Base(root) + " for its disk quota: permission denied"
	if r := callTool(t, tool, Files{Op: "write", Path: "b", Content: "b"}); r.Error != want {
		t.Fatalf("write: %q, want %q", r.Error, want)
	}
	if r := callTool(t, tool, Files{Op: "delete", Path: "a"}); r.Error != "" {
		t.Fatalf("delete: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Fatalf("a is still there: %v", err)
	}
}

// TestDiskQuotaSeesSpaceFreedByOthers: a write the count would refuse is
// checked again against a fresh count before it is refused, so room the
// operator made by hand is seen at once.
func TestDiskQuotaSeesSpaceFreedByOthers(t *testing.T) {
	const q = 4 * block
	root := t.TempDir()
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: q})}
	if r := callTool(t, tool, Files{Op: "write", Path: "a", Content: strings.Repeat("a", 3000)}); r.Error != "" {
		t.Fatalf("write a: %+v", r)
	}
	if err := os.Remove(filepath.Join(root, "a")); err != nil { // by hand
		t.Fatal(err)
	}
	if r := callTool(t, tool, Files{Op: "write", Path: "b", Content: strings.Repeat("b", 3*block)}); r.Error != "" {
		t.Fatalf("write b after a was removed by hand: %+v", r)
	}
	if r := callTool(t, tool, Files{Op: "write", Path: "c", Content: strings.Repeat("c", 1000)}); !strings.Contains(r.Error, ErrDiskQuota.Error()) {
		t.Fatalf("write c past the quota: %+v", r)
	}
}

// TestDiskQuotaCapsDeclared: a files listener's cap binds the directory's
// other writers from its first write there (diskquota.Dir.Limit), and is
// named in a refusal it causes; two agents' caps on one root hold the
// root to the smaller; a listener built again (a reload) with a larger
// cap for the same agent replaces its cap rather than adding one; Close
// ends the caps.
func TestDiskQuotaCapsDeclared(t *testing.T) {
	root := t.TempDir()
	cfg := func(n int) tools.Policy {
		return tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: n})
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := diskquota.DirOf(r)
	if err != nil {
		t.Fatal(err)
	}
	limit := func() int64 {
		d.Lock()
		defer d.Unlock()
		return d.Limit(1 << 40)
	}
	old := &Tool{Policy: cfg(4 * block)}
	if res := callTool(t, old, Files{Op: "write", Path: "a", Content: "x"}); res.Error != "" {
		t.Fatal(res.Error)
	}
	if got := limit(); got != 4*block {
		t.Fatalf("after the first write, the directory's cap is %d; want the listener's %d", got, 4*block)
	}
	other := &Tool{Policy: cfg(1 << 20)} // another agent's
	resp, err := other.Handle(context.Background(), &Files{Op: "write", Path: "b", Content: strings.Repeat("b", 5000)},
		xmlpipe.Metadata{From: "agent2"})
	if err != nil {
		t.Fatal(err)
	}
	res := resp.(*xmlpipe.RespondResponse).Payload.(*FilesResult)
	if !strings.Contains(res.Error, "max_disk_bytes 1048576 but another writer of the directory") ||
		!strings.Contains(res.Error, "caps it at "+strconv.Itoa(4*block)) {
		t.Errorf("a write past the other listener's cap: %q; want it refused naming both caps", res.Error)
	}
	reloaded := &Tool{Policy: cfg(1 << 20)} // the same agent, its cap raised
	if res := callTool(t, reloaded, Files{Op: "write", Path: "a", Content: "y"}); res.Error != "" {
		t.Fatal(res.Error)
	}
	if got := limit(); got != 1<<20 {
		t.Errorf("after a reload raised the agent's cap, the directory's cap is %d; want %d (agent2's)", got, 1<<20)
	}
	for _, tool := range []*Tool{old, other, reloaded} {
		if err := tool.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := limit(); got != 1<<40 {
		t.Errorf("after Close, the directory's cap is %d; want none declared", got)
	}
}
