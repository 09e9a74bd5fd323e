package store

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modeOf returns path's permission bits.
func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestStoreFilesArePrivate: a new data directory is 0700 and xmlpipe.db
// with its -wal and -shm files 0600; an existing directory and files that
// others could read are tightened when the store opens, with a log line.
func TestStoreFilesArePrivate(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		s := openAt(t, dir, Options{})
		if _, err := s.AppendSync(context.Background(), testEntry(1, "t")); err != nil {
			t.Fatal(err)
		}
		if m := modeOf(t, dir); m != 0o700 {
			t.Errorf("data directory mode %#o, want 0700", m)
		}
		for _, name := range []string{DatabaseFileName, DatabaseFileName + "-wal", DatabaseFileName + "-shm"} {
			if m := modeOf(t, filepath.Join(dir, name)); m != 0o600 {
				t.Errorf("%s mode %#o, want 0600", name, m)
			}
		}
	})
	t.Run("existing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		s := openAt(t, dir, Options{})
		if _, err := s.AppendSync(context.Background(), testEntry(1, "t")); err != nil {
			t.Fatal(err)
		}
		must(t, s.Close())
		db := filepath.Join(dir, DatabaseFileName)
		loose := []string{dir, db, db + "-wal", db + "-shm"}
		must(t, os.WriteFile(db+"-wal", nil, 0o644)) // Close checkpointed it away
		must(t, os.WriteFile(db+"-shm", nil, 0o644))
		for _, p := range loose {
			mode := fs.FileMode(0o644)
			if p == dir {
				mode = 0o755
			}
			must(t, os.Chmod(p, mode))
		}
		var logs bytes.Buffer
		s = openAt(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		defer s.Close()
		if m := modeOf(t, dir); m != 0o700 {
			t.Errorf("data directory mode %#o after open, want 0700", m)
		}
		for _, p := range loose[1:] {
			if m := modeOf(t, p); m != 0o600 {
				t.Errorf("%s mode %#o after open, want 0600", filepath.Base(p), m)
			}
		}
		if n := strings.Count(logs.String(), "tightened the permissions"); n != len(loose) {
			t.Errorf("%d log lines for %d loose files:\n%s", n, len(loose), logs.String())
		}
		if !strings.Contains(logs.String(), "was=0644") || !strings.Contains(logs.String(), "now=0600") {
			t.Errorf("the log does not say what changed:\n%s", logs.String())
		}
	})
}

// TestPrepareDatabaseFileKeepsOwnerBits: tightening only takes the group's
// and others' bits; a private file is left alone and not logged.
func TestPrepareDatabaseFileKeepsOwnerBits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	must(t, os.WriteFile(path, nil, 0o600))
	must(t, os.Chmod(path, 0o400))
	var logs bytes.Buffer
	must(t, PrepareDatabaseFile(path, slog.New(slog.NewTextHandler(&logs, nil))))
	if m := modeOf(t, path); m != 0o400 || logs.Len() != 0 {
		t.Fatalf("mode %#o, log %q", m, logs.String())
	}
}
