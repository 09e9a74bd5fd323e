package librarian

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDatabaseFileIsPrivate: library.db is created 0600 in the data
// directory, and its WAL files with it.
func TestDatabaseFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	e, err := OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, name := range []string{"library.db", "library.db-wal", "library.db-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %#o, want 0600", name, m)
		}
	}
}
