package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// A live data directory is not copied file by file: xmlpipe.db's newest
// commits are in its WAL (xmlpipe.db-wal) until a checkpoint copies them,
// and a copy of the two taken while the writer commits and checkpoints can
// pair a database file of one moment with a WAL of another — a copy that
// loses acknowledged messages or does not open. BackupDataDir copies each
// database with VACUUM INTO on a read-only connection: one read
// transaction, so the copy is the database as of one commit, WAL included,
// while the organism goes on writing (readers never block the writer in
// WAL mode). `sqlite3 data/xmlpipe.db ".backup x.db"` is consistent too,
// but restarts its copy whenever the writer commits meanwhile, which under
// steady traffic may be never.

// backupSkipped are the names in a data directory a backup leaves out:
// the lock (held by the running organism), SQLite's WAL, shared-memory
// and rollback journal files (each database's copy holds what they
// hold) and the WebAssembly compile cache (a start fills it again).
var backupSkipped = []string{lockFileName, "wasm-cache"}

// backupSkippedSuffixes are the endings of SQLite's side files.
var backupSkippedSuffixes = []string{"-wal", "-shm", "-journal"}

// sqliteHeader begins every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// BackupReport says what BackupDataDir copied.
type BackupReport struct {
	// Databases are the SQLite databases copied with VACUUM INTO, each
	// consistent as of one commit; Files the other files, copied as they
	// are; Bytes their total size in the backup.
	Databases, Files []string
	Bytes            int64
	// JournalSeq is the last journal seq in the copy of xmlpipe.db: every
	// message acknowledged before the backup began is at or below it.
	JournalSeq int64
}

// BackupDataDir copies the data directory dir into dst while an organism
// may hold it: dst must not exist or be an empty directory outside dir,
// and is created 0700 (its files 0600) so that it can be started on as a
// data directory (--data dst) or moved in place of dir. xmlpipe.db and
// every other SQLite database (tools.db) are copied as of one commit
// each; approvals.key, keys, certificates and the other files as they
// are; the lock, SQLite's side files and wasm-cache are left out. It fails
// with ErrNoDatabase when dir holds no store and with ErrInvalid for a
// dst it may not write.
func BackupDataDir(ctx context.Context, dir, dst string) (BackupReport, error) {
	var rep BackupReport
	src, err := filepath.Abs(dir)
	if err != nil {
		return rep, fmt.Errorf("store: backup: data directory %q: %w", dir, err)
	}
	to, err := filepath.Abs(dst)
	if err != nil {
		return rep, fmt.Errorf("store: backup: target %q: %w", dst, err)
	}
	if rel, err := filepath.Rel(src, to); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return rep, fmt.Errorf("%w: backup target %s is inside the data directory %s", ErrInvalid, to, src)
	}
	// The store's own check first: a directory without a store, or one
	// this binary cannot read, is refused before anything is written.
	r, err := OpenReadOnly(src)
	if err != nil {
		return rep, fmt.Errorf("store: backup: %w", err)
	}
	if err := r.Close(); err != nil {
		return rep, fmt.Errorf("store: backup: %w", err)
	}
	if err := makeBackupDir(to); err != nil {
		return rep, err
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		if skippedInBackup(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(out, 0o700)
		case !d.Type().IsRegular():
			return nil // sockets, links: nothing a start needs
		}
		isDB, err := isSQLiteFile(path)
		if err != nil {
			return err
		}
		if isDB {
			if err := vacuumInto(ctx, path, out); err != nil {
				return err
			}
			rep.Databases = append(rep.Databases, rel)
		} else {
			if err := copyPrivate(path, out); err != nil {
				return err
			}
			rep.Files = append(rep.Files, rel)
		}
		if fi, err := os.Stat(out); err == nil {
			rep.Bytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("store: backup %s into %s: %w", src, to, err)
	}
	copied, err := OpenReadOnly(to)
	if err != nil {
		return rep, fmt.Errorf("store: backup: the copy does not open: %w", err)
	}
	defer copied.Close()
	if rep.JournalSeq, err = copied.LastSeq(); err != nil {
		return rep, fmt.Errorf("store: backup: the copy's journal: %w", err)
	}
	return rep, nil
}

// makeBackupDir creates dst 0700, or takes an existing empty directory
// (tightened to 0700).
func makeBackupDir(dst string) error {
	err := os.MkdirAll(filepath.Dir(dst), 0o700)
	if err == nil {
		err = os.Mkdir(dst, 0o700)
	}
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("store: backup: %w", err)
	}
	entries, rerr := os.ReadDir(dst)
	if rerr != nil {
		return fmt.Errorf("%w: backup target %s exists and is not a directory", ErrInvalid, dst)
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: backup target %s is not empty", ErrInvalid, dst)
	}
	if err := os.Chmod(dst, 0o700); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// skippedInBackup reports whether a backup leaves the file or directory
// name out.
func skippedInBackup(name string) bool {
	for _, s := range backupSkipped {
		if name == s {
			return true
		}
	}
	for _, s := range backupSkippedSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// isSQLiteFile reports whether path begins with SQLite's header.
func isSQLiteFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		return false, err
	}
	return bytes.Equal(head, sqliteHeader), nil
}

// vacuumInto writes the database at path, as of one commit, to out
// (created 0600) through a read-only connection.
func vacuumInto(ctx context.Context, path, out string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	// VACUUM INTO creates the file with the process's umask; create it
	// empty and private first, which VACUUM INTO accepts.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, out); err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(path), err)
	}
	return os.Chmod(out, 0o600)
}

// copyPrivate copies the regular file src to dst, created 0600.
func copyPrivate(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
