package federation

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// A link writes far more small frames than large ones: every envelope in
// one direction is answered by an acknowledgement in the other, and under
// load the acknowledgements of the peer's envelopes leave while this side's
// own envelopes do. Written one websocket.Conn.WriteMessage each, every
// frame was a TLS record and a write(2) of its own (the acknowledgements'
// goroutine and the outbox's sender each writing theirs). After the
// handshake a link's frames are instead queued (linkWriter) and written by
// one goroutine (conn.writeLoop), which encodes everything queued when it
// wakes — the acknowledgements due, the envelopes of a sender's batch, a
// ping or a pong — into one buffer and writes it with one Write: one TLS
// record (up to its 16 KiB) and one system call per batch.
//
// gorilla/websocket has no way to write several messages at once, so the
// frames are encoded here (RFC 6455 §5.2: unfragmented, FIN set, masked
// when this side dialed) and written to the connection beneath it, whose
// writes are whole and ordered (crypto/tls and net write each call's bytes
// under a lock of their own). The handshake before it, the reading and the
// close frame stay gorilla's: once the link runs, nothing else writes a
// data frame, so no message of gorilla's can be cut by one of these.

// Websocket opcodes (RFC 6455 §5.2).
const (
	opText   = websocket.TextMessage
	opBinary = websocket.BinaryMessage
	opPing   = websocket.PingMessage
	opPong   = websocket.PongMessage
)

// maxControlPayload is the most a control frame (ping, pong) carries.
const maxControlPayload = 125

// writeChunk is how many bytes of encoded frames a batch gathers before it
// writes them: a batch of large envelopes is written in a few writes of
// about this size rather than held whole in a second buffer.
const writeChunk = 256 << 10

// keepBuffer is the largest write buffer a link keeps between batches.
const keepBuffer = 1 << 20

// outFrame is one frame queued for the link's writer.
type outFrame struct {
	op int
	b  []byte
	// written is told the outcome once the frame is written (or the link
	// failed); nil when nobody waits. It has room for the one value.
	written chan error
	// by, when set, is the latest the write carrying the frame may end
	// (a probe's ping); else writeTimeout from its start.
	by time.Time
}

// linkWriter is the queue of a link's frames and the buffer they are
// encoded into (conn.writeLoop). The acknowledgements are queued by the
// link's acker, which wakes the writer through the same kick.
type linkWriter struct {
	mu     sync.Mutex
	frames []outFrame
	kick   chan struct{}
	// client masks the frames (this side dialed the link).
	client bool
	// buf is the encoding buffer, used by the writer goroutine only.
	buf []byte
}

// queue adds frames and wakes the writer; it never blocks.
func (w *linkWriter) queue(frames ...outFrame) {
	w.mu.Lock()
	w.frames = append(w.frames, frames...)
	w.mu.Unlock()
	w.wake()
}

// wake wakes the writer (never blocking).
func (w *linkWriter) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// take returns what is queued and empties the queue; spare is a slice the
// queue may reuse.
func (w *linkWriter) take(spare []outFrame) []outFrame {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.frames
	w.frames = spare[:0]
	return f
}

// appendFrame appends the frame of opcode op carrying p to buf, masked
// with a fresh key when mask is set.
func appendFrame(buf []byte, op int, p []byte, mask bool) []byte {
	b1 := byte(0)
	if mask {
		b1 = 0x80
	}
	buf = append(buf, 0x80|byte(op))
	switch n := len(p); {
	case n < 126:
		buf = append(buf, b1|byte(n))
	case n <= 0xffff:
		buf = append(buf, b1|126)
		buf = binary.BigEndian.AppendUint16(buf, uint16(n))
	default:
		buf = append(buf, b1|127)
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	if !mask {
		return append(buf, p...)
	}
	key := rand.Uint32()
	buf = binary.LittleEndian.AppendUint32(buf, key)
	at := len(buf)
	buf = append(buf, p...)
	maskBytes(buf[at:], key)
	return buf
}

// maskBytes XORs b with key (its little-endian bytes, repeated), as the
// masking of a frame's payload that begins at b[0].
func maskBytes(b []byte, key uint32) {
	k := uint64(key) | uint64(key)<<32
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^k)
	}
	for ; i < len(b); i++ {
		b[i] ^= byte(key >> (8 * (i % 4)))
	}
}

// errPingLate: a ping that could not be written by its deadline.
var errPingLate = errors.New("not written in time")

// write queues the envelope b and waits until it is written.
func (c *conn) write(b []byte) error { return c.writeAll(opBinary, b) }

// writeFrame queues the JSON text frame f and waits until it is written.
func (c *conn) writeFrame(f frame) error { return c.writeAll(opText, f.marshal()) }

// writeAll queues messages of opcode op, in order, and waits until they
// are written (in one batch, with whatever else is queued then) or the
// link fails.
func (c *conn) writeAll(op int, msgs ...[]byte) error {
	if len(msgs) == 0 {
		return nil
	}
	select {
	case <-c.done:
		return errLinkClosed
	default:
	}
	written := make(chan error, 1)
	frames := make([]outFrame, len(msgs))
	for i, b := range msgs {
		frames[i] = outFrame{op: op, b: b}
	}
	frames[len(frames)-1].written = written
	c.out.queue(frames...)
	select {
	case err := <-written:
		return err
	case <-c.done:
		return errLinkClosed
	}
}

// ping queues a ping carrying how many bytes this side will have written
// before it (the pong says the peer read that much: readUpTo) and waits
// until it is written, by deadline at the latest.
func (c *conn) ping(deadline time.Time) error {
	written := make(chan error, 1)
	c.out.queue(outFrame{op: opPing, written: written, by: deadline})
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case err := <-written:
		return err
	case <-c.done:
		return errLinkClosed
	case <-t.C:
		return errPingLate
	}
}

// pong queues the answer to a ping carrying data; it does not wait.
func (c *conn) pong(data []byte) {
	if len(data) > maxControlPayload {
		data = data[:maxControlPayload]
	}
	c.out.queue(outFrame{op: opPong, b: data})
}

// writeLoop writes the link's frames until it ends: each time it wakes,
// the acknowledgements due and every frame queued, in one batch.
func (c *conn) writeLoop() {
	nc := c.ws.NetConn()
	var acks []frame
	var frames []outFrame
	for {
		select {
		case <-c.done:
			return
		case <-c.out.kick:
		}
		// The commit that made acknowledgements durable woke the
		// goroutines waiting for it (the pump's event gate, whose event a
		// caller waits on) before the writer woke this one, which the
		// scheduler then runs first on its processor: let them go ahead,
		// and what they queue meanwhile join this batch.
		runtime.Gosched()
		acks = c.acks.takeList(acks)
		frames = c.out.take(frames)
		err := c.writeBatch(nc, acks, frames)
		for i := range frames {
			if w := frames[i].written; w != nil {
				w <- err
			}
		}
		clear(frames)
		if err != nil {
			c.close(fmt.Errorf("write: %w", err))
			return // the peer resends what it lacks
		}
		c.acks.settleAll(acks)
		clear(acks)
	}
}

// writeBatch encodes acks and frames, in that order, and writes them to nc.
func (c *conn) writeBatch(nc net.Conn, acks []frame, frames []outFrame) error {
	select {
	case <-c.done:
		return errLinkClosed
	default:
	}
	deadline := time.Now().Add(writeTimeout)
	for _, f := range frames {
		if !f.by.IsZero() && f.by.Before(deadline) {
			deadline = f.by
		}
	}
	if err := nc.SetWriteDeadline(deadline); err != nil {
		return err
	}
	buf := c.out.buf[:0]
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := nc.Write(buf)
		buf = buf[:0]
		return err
	}
	add := func(op int, p []byte) error {
		if op == opText || op == opBinary {
			// Counted before it is written: a probe's ping behind it
			// must find it on its way (keepalive).
			c.written.Add(int64(len(p)))
		}
		buf = appendFrame(buf, op, p, c.out.client)
		if len(buf) >= writeChunk {
			return flush()
		}
		return nil
	}
	var err error
	for i := 0; err == nil && i < len(acks); i++ {
		err = add(opText, acks[i].marshal())
	}
	for i := 0; err == nil && i < len(frames); i++ {
		p := frames[i].b
		if frames[i].op == opPing {
			p = strconv.AppendInt(nil, c.written.Load(), 10)
		}
		err = add(frames[i].op, p)
	}
	if err == nil {
		err = flush()
	}
	if cap(buf) <= keepBuffer {
		c.out.buf = buf[:0]
	} else {
		c.out.buf = nil
	}
	return err
}
