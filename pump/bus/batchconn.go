package bus

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// maxBatchBytes bounds the bytes a socket's writer gathers before it writes
// them out (four full TLS records).
const maxBatchBytes = 64 << 10

// batchConn is a WebSocket's network connection that can gather the frames
// its writer produces back to back into one write: each write to a TLS
// connection is a TLS record, an AEAD seal and a system call, and a burst of
// a conversation's events (message, message, output, complete) costs one of
// each instead of one per frame. Between begin and end, data frames are
// buffered; end writes them. A control frame (close, ping, pong — written
// by other goroutines too) is never held back: it flushes what is buffered
// and is written at once, so frames keep their order and a close frame is
// not stranded in a buffer.
type batchConn struct {
	net.Conn

	// writes counts the network writes (nil: not counted).
	writes *atomic.Int64

	mu       sync.Mutex
	batching bool
	buf      []byte
}

// write writes p to the network, counting it.
func (b *batchConn) write(p []byte) (int, error) {
	if b.writes != nil {
		b.writes.Add(1)
	}
	return b.Conn.Write(p)
}

// isControlFrame reports whether p starts a WebSocket control frame (FIN
// set, opcode 8–10). A misread (the tail of a large data frame written in a
// second piece) only costs a flush: order is kept either way.
func isControlFrame(p []byte) bool {
	return len(p) > 0 && p[0]&0x80 != 0 && p[0]&0x0f >= 0x8
}

// Write buffers p while batching (unless it is a control frame), else
// writes it.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.batching && !isControlFrame(p) {
		if len(b.buf)+len(p) > maxBatchBytes {
			if err := b.flushLocked(); err != nil {
				return 0, err
			}
		}
		if len(p) <= maxBatchBytes {
			b.buf = append(b.buf, p...)
			return len(p), nil
		}
	}
	if err := b.flushLocked(); err != nil {
		return 0, err
	}
	return b.write(p)
}

// begin starts gathering frames.
func (b *batchConn) begin() {
	b.mu.Lock()
	b.batching = true
	b.mu.Unlock()
}

// end stops gathering and writes what was gathered.
func (b *batchConn) end() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batching = false
	return b.flushLocked()
}

// flushLocked writes the buffer out (b.mu held). A buffer grown by a large
// burst is released rather than kept for the socket's lifetime.
func (b *batchConn) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.write(b.buf)
	if cap(b.buf) > maxBatchBytes/4 {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// batchWriter is a ResponseWriter whose hijacked connection (the
// WebSocket's, after the upgrade) is a batchConn.
type batchWriter struct {
	http.ResponseWriter
	conn *batchConn
	// writes counts the connection's network writes.
	writes *atomic.Int64
}

// Hijack implements http.Hijacker for the WebSocket upgrade.
func (w *batchWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &batchConn{Conn: c, writes: w.writes}
	return w.conn, brw, nil
}

// Unwrap returns the wrapped ResponseWriter (for http.ResponseController).
func (w *batchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
