package organism

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadModuleNeverBlocksOnASwappedFIFO: a module path that is swapped
// between a regular file and a FIFO while register-listener reads it is
// either read (the regular file) or refused with ErrNotModule (the FIFO),
// never blocking the request: the type is checked on the file opened
// without blocking, not on the path before opening it. (Checking the path
// first, then opening it, blocked within a few thousand reads here.)
func TestReadModuleNeverBlocksOnASwappedFIFO(t *testing.T) {
	dir := t.TempDir()
	module := filepath.Join(dir, "calc.wasm")
	content := append(append([]byte{}, wasmMagic...), 1, 0, 0, 0)
	if err := os.WriteFile(module, content, 0o600); err != nil {
		t.Fatal(err)
	}

	// The swapper puts a FIFO, then a regular file, in the module's place
	// (rename is atomic) until the reads are done.
	stop := make(chan struct{})
	swapped := make(chan error, 1)
	go func() {
		tmp := filepath.Join(dir, "next")
		for i := 0; ; i++ {
			select {
			case <-stop:
				swapped <- nil
				return
			default:
			}
			var err error
			if i%2 == 0 {
				err = syscall.Mkfifo(tmp, 0o600)
			} else {
				err = os.WriteFile(tmp, content, 0o600)
			}
			if err == nil {
				err = os.Rename(tmp, module)
			}
			if err != nil {
				swapped <- err
				return
			}
		}
	}()

	const reads = 50000
	done := make(chan error, 1)
	go func() {
		for range reads {
			if _, err := readModule(dir, module); err != nil && !errors.Is(err, ErrNotModule) {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		close(stop)
		if err != nil {
			t.Errorf("readModule: %v, want the module or ErrNotModule", err)
		}
		if err := <-swapped; err != nil {
			t.Fatalf("swapping the module: %v", err)
		}
	case <-time.After(60 * time.Second):
		// The blocked open waits on a FIFO already unlinked: no writer can
		// reach it, so the reading goroutine is left behind.
		close(stop)
		<-swapped
		t.Fatalf("readModule blocked on a FIFO swapped in after the path was checked")
	}
}
