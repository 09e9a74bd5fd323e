package kv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDatabaseFileIsPrivate: tools.db is created 0600 in the data
// directory, and its WAL files with it.
func TestDatabaseFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"tools.db", "tools.db-wal", "tools.db-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %#o, want 0600", name, m)
		}
	}
}
