package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// The data directory holds password hashes, TOTP secrets, keys and every
// message: it and its database files are the owner's alone.
const (
	privateDirMode  fs.FileMode = 0o700
	privateFileMode fs.FileMode = 0o600
)

// databaseSidecars are the files SQLite keeps beside a database.
var databaseSidecars = []string{"-wal", "-shm", "-journal"}

// PrepareDataDir creates dir with mode 0700, or takes the group's and
// others' permissions away from an existing one, saying so on log (nil:
// slog.Default()).
func PrepareDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, privateDirMode); err != nil {
		return fmt.Errorf("store: create data directory: %w", err)
	}
	return tighten(dir, privateDirMode, log)
}

// PrepareDatabaseFile makes path, an SQLite database in a data directory,
// the owner's alone before SQLite opens it: a missing file is created empty
// with mode 0600 (SQLite gives the -wal and -shm files it creates the
// database file's mode), and an existing one, with its -wal, -shm and
// -journal files, loses the group's and others' permissions, which is
// logged (log nil: slog.Default()).
func PrepareDatabaseFile(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, privateFileMode)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return fmt.Errorf("store: create %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	for _, p := range append([]string{path}, sidecarsOf(path)...) {
		if err := tighten(p, privateFileMode, log); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// sidecarsOf returns the paths of path's SQLite sidecar files.
func sidecarsOf(path string) []string {
	out := make([]string, len(databaseSidecars))
	for i, s := range databaseSidecars {
		out[i] = path + s
	}
	return out
}

// tighten takes from path the permissions mode does not grant to the group
// and others, logging when it did.
func tighten(path string, mode fs.FileMode, log *slog.Logger) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	perm := st.Mode().Perm()
	loose := perm &^ mode & 0o077
	if loose == 0 {
		return nil
	}
	want := perm &^ loose
	if err := os.Chmod(path, want); err != nil {
		return fmt.Errorf("store: make %s private: %w", path, err)
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn("store: tightened the permissions of a data file: it was readable by others", "path", path,
		"was", fmt.Sprintf("%#o", perm), "now", fmt.Sprintf("%#o", want))
	return nil
}
