package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesAModuleThatIsNoFile: a module path naming a FIFO (or a
// device, a directory) is refused at once instead of blocking the organism's
// start, or xmlpipe wasm check, on a read that never ends.
func TestOpenRefusesAModuleThatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "calc.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, dir} {
		done := make(chan error, 1)
		go func() {
			_, err := Open(context.Background(), Options{Name: "calc", Module: path})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: err = %v, want ErrNotRegular", path, err)
			}
		case <-time.After(30 * time.Second):
			// Let the blocked read end: a writer comes and goes.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				_ = w.Close()
			}
			<-done
			t.Fatalf("%s: Open still blocked after 30s", path)
		}
	}
}
