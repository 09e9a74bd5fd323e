package wasm

import (
	"errors"
	"io"
)

// input is a guest's stdin: the payload of the current call, swapped in
// before each call so one reactor instance serves many.
type input struct {
	b   []byte
	off int
}

func (r *input) reset(b []byte) { r.b, r.off = b, 0 }

// Read implements io.Reader.
func (r *input) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

var errOverCap = errors.New("output over the cap")

// output is a guest's stdout or stderr, capped: a write past the cap fails
// (the guest sees EIO) and is remembered.
type output struct {
	b    []byte
	max  int
	over bool
}

func (w *output) reset() { w.b, w.over = w.b[:0], false }

// Write implements io.Writer.
func (w *output) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > w.max {
		w.over = true
		n := w.max - len(w.b)
		w.b = append(w.b, p[:n]...)
		return n, errOverCap
	}
	w.b = append(w.b, p...)
	return len(p), nil
}
