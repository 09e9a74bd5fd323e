package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// TestConfigFIFORefused: a configuration given as a pipe was read once
// at the start; a reload (SIGHUP, the bus API) must refuse it at once
// rather than block until some writer opens the pipe.
func TestConfigFIFORefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "organism.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := configSource{path: fifo}.load()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, regfile.ErrNotRegular) {
			t.Fatalf("load of a FIFO: %v, want regfile.ErrNotRegular", err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, fifo) || !strings.Contains(msg, "a FIFO") {
			t.Errorf("message %q: want the file and what it is", msg)
		}
	case <-time.After(30 * time.Second):
		// Unblock the reader so the test ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("load of a FIFO blocked")
	}
}

// TestConfigReadTwice: a reload of a regular file reads it as the
// start did.
func TestConfigReadTwice(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, defaultOrganism, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configSource{path: path}.load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	want, err := configSource{path: path}.load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if cfg.Organism.Name != want.Organism.Name || len(cfg.Listeners) != len(want.Listeners) {
		t.Errorf("first load gave %q with %d listeners, the second %q with %d", cfg.Organism.Name, len(cfg.Listeners),
			want.Organism.Name, len(want.Listeners))
	}
}
