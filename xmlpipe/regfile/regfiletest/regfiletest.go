// Package regfiletest helps test that a file read never blocks on a FIFO:
// FIFO makes one, Prompt runs a read against a deadline and frees it if
// it blocked.
package regfiletest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Deadline is how long a read may take before it counts as blocked: long,
// for a loaded machine under -race.
const Deadline = 30 * time.Second

// FIFO makes a FIFO named name in a temporary directory of tb and returns
// its path.
func FIFO(tb testing.TB, name string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Prompt runs read and returns its error. If read has not returned within
// Deadline (it blocked on the FIFO at fifo), a writer opens and closes
// the FIFO to free it and the test fails.
func Prompt(tb testing.TB, fifo string, read func() error) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(Deadline):
		// Free every blocked open (read may open the FIFO more than once)
		// until read returns; a writer opens only while a reader waits.
		for {
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = w.Close()
			}
			select {
			case err := <-done:
				tb.Fatalf("a read of the FIFO %s blocked for %s (then: %v)", fifo, Deadline, err)
				return err
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}
