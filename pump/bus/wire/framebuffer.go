package wire

import "io"

// ReadFrameInto reads r (one WebSocket frame's reader) to its end into
// *buf, reusing its memory, and returns the frame. The returned bytes are
// valid until the next call with the same buf: a caller copies what it
// keeps. A buffer grown past keep bytes by an earlier frame is dropped, so
// one large frame does not pin its memory for the connection's life.
func ReadFrameInto(r io.Reader, buf *[]byte, keep int) ([]byte, error) {
	if cap(*buf) > keep {
		*buf = nil
	}
	b := (*buf)[:0]
	if cap(b) == 0 {
		b = make([]byte, 0, 512)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read into
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*buf = b
			return b, nil
		}
		if err != nil {
			*buf = b
			return nil, err
		}
	}
}
