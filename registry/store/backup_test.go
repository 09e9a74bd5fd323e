package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestBackupUnderLoad backs up a data directory while four writers append
// to its journal, restores the copy as a fresh data directory and checks
// that a store opens on it, that journal verify passes, and that every
// append acknowledged before the backup began is there; the other files
// come along (approvals.key, a second database), the lock, the WAL and
// the wasm cache do not.
func TestBackupUnderLoad(t *testing.T) {
	s, dir := openTest(t, Options{})
	key := []byte("0123456789abcdef0123456789abcdef")
	must(t, os.WriteFile(filepath.Join(dir, "approvals.key"), key, 0o600))
	must(t, os.MkdirAll(filepath.Join(dir, "wasm-cache", "v1"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "wasm-cache", "v1", "tool.bin"), []byte("compiled"), 0o600))
	tools, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tools.db")+"?_journal_mode=WAL")
	must(t, err)
	_, err = tools.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT); INSERT INTO kv VALUES ('colour', 'teal')`)
	must(t, err)
	defer tools.Close() // held open, its WAL beside it, as the key_value tool holds it

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var (
		mu    sync.Mutex
		acked []int64
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				seq, err := s.AppendSync(ctx, testEntry(i, fmt.Sprintf("backup-%d", g)))
				if err != nil {
					t.Errorf("AppendSync: %v", err)
					return
				}
				mu.Lock()
				acked = append(acked, seq)
				mu.Unlock()
			}
		})
	}
	// Let the load run until a few hundred appends are acknowledged.
	for deadline := time.Now().Add(60 * time.Second); ; {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d appends acknowledged in a minute", n)
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	before := append([]int64(nil), acked...)
	mu.Unlock()
	dst := filepath.Join(t.TempDir(), "backup")
	rep, err := BackupDataDir(ctx, dir, dst)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("BackupDataDir under load: %v", err)
	}
	t.Logf("backup: %+v (%d appends acknowledged before it began)", rep, len(before))

	for _, gone := range []string{lockFileName, DatabaseFileName + "-wal", DatabaseFileName + "-shm", "tools.db-wal", "wasm-cache"} {
		if _, err := os.Stat(filepath.Join(dst, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the backup holds %s (err %v), want it left out", gone, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dst, "approvals.key")); err != nil || !bytes.Equal(got, key) {
		t.Errorf("approvals.key in the backup: %q, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "approvals.key")); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("approvals.key in the backup has mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, err := os.Stat(dst); err == nil && fi.Mode().Perm() != 0o700 {
		t.Errorf("the backup directory has mode %v, want 0700", fi.Mode().Perm())
	}
	restored, err := sql.Open("sqlite", "file:"+filepath.Join(dst, "tools.db")+"?mode=ro")
	must(t, err)
	defer restored.Close()
	var colour string
	if err := restored.QueryRow(`SELECT v FROM kv WHERE k = 'colour'`).Scan(&colour); err != nil || colour != "teal" {
		t.Errorf("tools.db in the backup: %q, %v", colour, err)
	}

	r := openAt(t, dst, Options{})
	vr, err := r.Verify(context.Background(), nil)
	if err != nil || !vr.OK() {
		t.Fatalf("verify of the restored data directory: %v, %+v", err, vr.Faults)
	}
	last, err := r.LastSeq()
	must(t, err)
	if last != rep.JournalSeq {
		t.Errorf("restored journal ends at seq %d, the backup reported %d", last, rep.JournalSeq)
	}
	es, err := r.After(0, 1<<30)
	must(t, err)
	have := map[int64]bool{}
	for _, e := range es {
		have[e.Seq] = true
	}
	for _, seq := range before {
		if !have[seq] {
			t.Fatalf("seq %d was acknowledged before the backup began and is not in it", seq)
		}
	}
}

// TestBackupRefusesTarget: a backup never writes into an existing,
// non-empty directory nor inside the data directory itself.
func TestBackupRefusesTarget(t *testing.T) {
	_, dir := openTest(t, Options{})
	full := t.TempDir()
	must(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o600))
	for _, dst := range []string{full, filepath.Join(dir, "backup")} {
		if _, err := BackupDataDir(context.Background(), dir, dst); !errors.Is(err, ErrInvalid) {
			t.Errorf("BackupDataDir into %s: %v, want ErrInvalid", dst, err)
		}
	}
	if _, err := BackupDataDir(context.Background(), t.TempDir(), filepath.Join(t.TempDir(), "b")); !errors.Is(err, ErrNoDatabase) {
		t.Errorf("BackupDataDir of a directory without a store: %v, want ErrNoDatabase", err)
	}
}
