package wasmtest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPruneRemovesOldEntries(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	files := map[string]time.Duration{
		"wazero-v1-amd64-linux/fresh": time.Hour,
		"wazero-v1-amd64-linux/stale": 2 * CacheMaxAge,
		"wazero-v0-amd64-linux/stale": 2 * CacheMaxAge,
	}
	for name, age := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("compiled"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	prune(dir, now.Add(-CacheMaxAge))
	for name, want := range map[string]bool{
		"wazero-v1-amd64-linux/fresh": true,
		"wazero-v1-amd64-linux/stale": false,
		"wazero-v0-amd64-linux":       false, // left empty: removed
	} {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := !errors.Is(err, os.ErrNotExist); got != want {
			t.Errorf("%s exists = %v, want %v (%v)", name, got, want, err)
		}
	}
}
