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

// TestOpenRefusesAFileThatIsNoFile: a module or xsd path naming a FIFO (or
// a device, a directory) is refused at once instead of blocking the
// organism's start, a reload, or xmlpipe wasm check, on a read that never
// ends.
func TestOpenRefusesAFileThatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "calc.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	calc := guest(t, "calc", Reactor)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"module FIFO", Options{Name: "calc", Module: fifo}},
		{"module directory", Options{Name: "calc", Module: dir}},
		{"xsd FIFO", Options{Name: "calc", Wasm: calc, XSD: fifo, Cache: testCache}},
		{"xsd directory", Options{Name: "calc", Wasm: calc, XSD: dir, Cache: testCache}},
	} {
		done := make(chan error, 1)
		go func() {
			l, err := Open(context.Background(), tc.o)
			if err == nil {
				err = l.Close(context.Background())
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: err = %v, want ErrNotRegular", tc.name, err)
			}
		case <-time.After(30 * time.Second):
			// Let the blocked read end: a writer comes and goes.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				_ = w.Close()
			}
			<-done
			t.Fatalf("%s: Open still blocked after 30s", tc.name)
		}
	}
}
