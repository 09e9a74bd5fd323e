package diskquota

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCountAnyName: a name that is not UTF-8 (a WASM guest or a tool may
// make one: Linux takes any bytes) is counted like any other; io/fs refuses
// such names, and the count failed with "invalid argument" (FuzzRootFS).
func TestCountAnyName(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "\xfa\xd0")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Skipf("the file system takes no such name: %v", err)
	}
	if err := os.WriteFile(filepath.Join(sub, "f\xff"), make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Count(dir)
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	if want := 2*EntryBytes + RoundUp(100); got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tree, err := CountTree(root, "\xfa\xd0")
	if err != nil {
		t.Fatalf("CountTree: %v", err)
	}
	if tree.names != 2 || tree.files == nil || len(tree.files) != 1 {
		t.Errorf("CountTree = %+v, want the dir and its file", tree)
	}
}
