package store

import "testing"

// TestNewStorePageSize: a new store uses 16 KiB pages in WAL mode.
func TestNewStorePageSize(t *testing.T) {
	s, _ := openTest(t, Options{})
	var size int
	var mode string
	must(t, s.rdb.QueryRow(`PRAGMA page_size`).Scan(&size))
	must(t, s.rdb.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	if size != 16384 || mode != "wal" {
		t.Fatalf("page_size %d, journal_mode %q; want 16384, wal", size, mode)
	}
}
