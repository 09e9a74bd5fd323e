package wasm

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadModule reads the module file at path. The file is opened without
// blocking and must be a regular file (else ErrNotRegular): a FIFO would
// block the read until a writer came, for good if none does.
func ReadModule(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotRegular, path, kindOf(fi.Mode()))
	}
	return io.ReadAll(f)
}

// kindOf names a file mode's type.
func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}
