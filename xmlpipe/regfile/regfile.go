package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular means a path names no regular file (a FIFO, a device, a
// socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// nonblocking are the flags every file is opened with: read-only, and
// without blocking, so opening a FIFO with no writer returns at once.
const nonblocking = os.O_RDONLY | syscall.O_NONBLOCK

// Open opens the file at path for reading. It is opened without blocking
// and its type is checked on the open file (not on the path, which could
// be swapped in between), so a FIFO or device never blocks the caller; one
// that is not a regular file is closed and refused with ErrNotRegular.
func Open(path string) (*os.File, error) {
	return check(os.OpenFile(path, nonblocking, 0))
}

// OpenIn opens the file name inside root as Open does.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	return check(root.OpenFile(name, nonblocking, 0))
}

// Read reads the whole regular file at path (see Open).
func Read(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// check returns f if it is a regular file, else closes it and says what it
// is.
func check(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf("%w: %s", ErrNotRegular, kindOf(fi.Mode()))}
	}
	return f, nil
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
