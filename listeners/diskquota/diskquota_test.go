package diskquota

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCount: content and link targets in whole blocks, and EntryBytes a name; a file's content
// once however many names it has; a sparse file in full.
func TestCount(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("a", 100)
	write("sub/b", 10)
	if err := os.Symlink("sub/b", filepath.Join(dir, "l")); err != nil { // target: 5 bytes
		t.Fatal(err)
	}
	want := 5*EntryBytes + RoundUp(100) + RoundUp(10) + RoundUp(5) // sub, a, sub/b, l, sparse
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "a2")); err == nil {
		want += EntryBytes // the second name, not the content again
	} else {
		t.Log("no hard links here:", err)
	}
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want += 1 << 20
	got, err := Count(dir)
	if err != nil || got != want {
		t.Fatalf("Count = %d, %v; want %d", got, err, want)
	}
	if _, err := Count(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Count of a missing directory: no error")
	}
}

// TestCountThroughASymbolicLink: a directory named through a symbolic link
// (a dir or root configured as a link) is counted, not taken for an empty
// one: the link itself was walked, as a leaf.
func TestCountThroughASymbolicLink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "real")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(base, "link")} {
		if got, err := Count(d); err != nil || got != RoundUp(100)+EntryBytes {
			t.Errorf("Count(%s) = %d, %v; want %d", d, got, err, RoundUp(100)+EntryBytes)
		}
	}
}
