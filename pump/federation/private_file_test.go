package federation

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStateFileIsPrivate: federation.db and its WAL files are the owner's
// alone (0600), also when an earlier run left them readable by others.
func TestStateFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DatabaseFileName)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := openDB(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if _, err := d.enqueue("g", "id-1", []byte("<x/>"), time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{DatabaseFileName, DatabaseFileName + "-wal", DatabaseFileName + "-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %#o, want 0600", name, m)
		}
	}
}
