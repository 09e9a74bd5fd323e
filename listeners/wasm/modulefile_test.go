package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestReadModuleRefusesAHugeFile: module: naming a file larger than any
// module (a disk image, a log, a sparse file) is refused from its size,
// before it is read: reading it whole could take the running organism
// down at a reload. The check reads nothing of it.
func TestReadModuleRefusesAHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.wasm")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write([]byte("\x00asm\x01\x00\x00\x00"))
	if err == nil {
		err = f.Truncate(MaxModuleBytes + 1) // sparse: no disk used
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadModule(path)
	if !errors.Is(err, ErrModuleTooLarge) {
		t.Fatalf("err = %v, want ErrModuleTooLarge", err)
	}
	for _, w := range []string{path, "268435457 bytes", "at most 268435456"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}
