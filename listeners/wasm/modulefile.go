package wasm

import (
	"errors"
	"fmt"
	"io"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// MaxModuleBytes caps a module file: 256 MiB, several times the largest
// guests (a Go guest is a few MiB, an interpreter with its library some
// tens), and far below what would take the organism down if a reload read
// a file named by mistake (a disk image, a log) whole.
const MaxModuleBytes = 256 << 20

// ErrModuleTooLarge means the module file is larger than MaxModuleBytes.
var ErrModuleTooLarge = errors.New("wasm: module file too large")

// ReadModule reads the module file at path. The file is opened without
// blocking and must be a regular file (else ErrNotRegular): a FIFO would
// block the read until a writer came, for good if none does. A file larger
// than MaxModuleBytes is refused (ErrModuleTooLarge) from its size, before
// any of it is read.
func ReadModule(path string) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return fmt.Errorf("%w: %s is %d bytes, a module may have at most %d (%d MiB)",
			ErrModuleTooLarge, path, size, MaxModuleBytes, MaxModuleBytes>>20)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxModuleBytes {
		return nil, tooLarge(fi.Size())
	}
	// The file may grow while it is read: at most one byte past the cap is.
	b, err := io.ReadAll(io.LimitReader(f, MaxModuleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxModuleBytes {
		return nil, tooLarge(int64(len(b)))
	}
	return b, nil
}
