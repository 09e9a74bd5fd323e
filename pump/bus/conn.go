package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// sessionRecheck is how often a long-lived socket re-validates its session
// (a revoked or expired token closes it with 1008).
const sessionRecheck = time.Minute

// Close codes the bus uses besides gorilla's named ones.
const (
	// closeTryAgainLater (1013) closes a client whose send queue overflowed.
	closeTryAgainLater = 1013
)

// Close reasons of frames the bus cannot take.
const (
	// ReasonTooBig closes a socket (1009) whose frame exceeds
	// Options.MaxFrameBytes; the limit follows it (": limit N bytes").
	ReasonTooBig = "Message too big"
	// ReasonInvalidUTF8 closes a socket (1007) whose text frame is not
	// valid UTF-8.
	ReasonInvalidUTF8 = "Invalid UTF-8 in text frame"
)

// Errors of a frame the socket refused (it is closing).
var (
	errFrameTooBig = errors.New("frame exceeds the size limit")
	errFrameUTF8   = errors.New("text frame is not valid UTF-8")
)

// encoder turns one queued item into a WebSocket message. Empty data skips
// the item; an error is logged and skips it.
type encoder func(item any) (messageType int, data []byte, err error)

// jsonFrame is the text frame of a JSON socket carrying v (nil: none).
func jsonFrame(v any) (int, []byte, error) {
	if v == nil {
		return 0, nil, nil
	}
	b, err := json.Marshal(v)
	return websocket.TextMessage, b, err
}

// conn is one WebSocket: a bounded send queue drained by one writer
// goroutine (which also pings), the session of its user, and a close path
// that never blocks the caller — the pump delivers into send, so a slow
// client must never stall it.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	log    *slog.Logger
	encode encoder

	ctx    context.Context
	cancel context.CancelFunc

	// sess is the user's session (zero until authenticated); checked is
	// when it was last validated.
	sess    auth.Session
	checked time.Time

	// batch is the connection under ws: the writer gathers the frames
	// waiting in out into one write.
	batch *batchConn

	// limited caps the frame readFrame reads (kept here: one per socket,
	// not one per frame).
	limited io.LimitedReader
	// reuseReads: the frame handler keeps nothing of the bytes it is given
	// (it copies what it keeps), so readFrame reads every frame into rbuf.
	reuseReads bool
	rbuf       []byte

	out chan any
	// qmu orders queueing: last is the item queued last, which a piece of
	// streamed text may join (sendDelta).
	qmu       sync.Mutex
	last      any
	closing   chan struct{}
	closeOnce sync.Once
	wrote     chan struct{} // closed when the writer goroutine has returned
}

// openConn upgrades r to a WebSocket of kind (the "socket" of its log
// lines) for sess, registered with Shutdown's wait, and starts its writer.
// A session without a user is learnt later: see authenticated. It answers
// the request itself and returns nil once Shutdown started (503 "Server
// shutting down") or when the upgrade failed. The caller runs the socket
// with serve and, whatever happens, ends it with finish.
func (s *Server) openConn(w http.ResponseWriter, r *http.Request, kind string, sess auth.Session,
	encode encoder) *conn {
	if !s.enter() {
		writeError(w, http.StatusServiceUnavailable, "Server shutting down")
		return nil
	}
	bw := &batchWriter{ResponseWriter: w, writes: &s.sockets.writes}
	ws, err := s.up.Upgrade(bw, r, nil)
	if err != nil {
		s.leave()
		return nil // the upgrader answered
	}
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{s: s, ws: ws, log: s.log.With("socket", kind, "addr", clientAddr(r)), encode: encode, ctx: ctx,
		cancel: cancel, checked: time.Now(), out: make(chan any, s.opts.SendQueue), closing: make(chan struct{}),
		wrote: make(chan struct{}), batch: bw.conn}
	if sess.Username != "" {
		c.authenticated(sess)
	}
	// No read limit in gorilla: it would close an oversized frame with 1009
	// and no reason. readFrame enforces MaxFrameBytes itself.
	ws.SetReadLimit(0)
	s.track(c)
	s.wg.Add(1)
	go c.writeLoop()
	return c
}

// authenticated sets the socket's session once its user is known.
func (c *conn) authenticated(sess auth.Session) {
	c.sess = sess
	c.log = c.log.With("user", sess.Username)
}

// serve runs the read loop until the socket closes: from now on a socket
// silent for PongWait is closed (keepalive), and each frame goes to handle
// while the session stays valid; a revoked or expired session closes the
// socket with 1008 "Session expired".
func (c *conn) serve(handle func(data []byte)) {
	c.keepalive()
	for {
		_, data, err := c.read()
		if err != nil {
			return
		}
		if !c.sessionValid() {
			c.close(websocket.ClosePolicyViolation, "Session expired")
			return
		}
		handle(data)
	}
}

// sessionValid re-validates the session at most once per sessionRecheck
// (never in insecure mode).
func (c *conn) sessionValid() bool {
	if c.s.opts.Insecure || time.Since(c.checked) < sessionRecheck {
		return true
	}
	c.checked = time.Now()
	_, err := c.s.opts.Auth.Session(c.ctx, c.sess.Token)
	return err == nil || !errors.Is(err, auth.ErrInvalidToken)
}

// keepalive starts the read deadline: from now on a socket silent (no frame,
// no pong) for PongWait is closed.
func (c *conn) keepalive() {
	c.touchRead()
	c.ws.SetPongHandler(func(string) error { c.touchRead(); return nil })
}

// touchRead extends the read deadline: a socket silent for PongWait is dead.
func (c *conn) touchRead() {
	if c.s.opts.PongWait > 0 {
		_ = c.ws.SetReadDeadline(time.Now().Add(c.s.opts.PongWait))
	}
}

// read returns the next message, extending the read deadline.
func (c *conn) read() (int, []byte, error) {
	mt, data, err := c.readFrame()
	if err == nil {
		c.touchRead()
	}
	return mt, data, err
}

// readFrame reads the next message, at most MaxFrameBytes of it: a bigger
// one closes the socket with 1009 and ReasonTooBig, a text message that is
// not valid UTF-8 with 1007 and ReasonInvalidUTF8 (RFC 6455 §8.1), and both
// are returned as errors.
func (c *conn) readFrame() (int, []byte, error) {
	mt, r, err := c.ws.NextReader()
	if err != nil {
		return mt, nil, err
	}
	limit := c.s.opts.MaxFrameBytes
	c.limited = io.LimitedReader{R: r, N: limit + 1}
	var data []byte
	if c.reuseReads {
		data, err = c.readReused()
	} else {
		data, err = io.ReadAll(&c.limited)
	}
	c.limited.R = nil
	if err != nil {
		return mt, nil, err
	}
	if int64(len(data)) > limit {
		c.log.Warn("frame too big: closing", "limit", limit)
		c.close(websocket.CloseMessageTooBig, fmt.Sprintf("%s: limit %d bytes", ReasonTooBig, limit))
		return mt, nil, errFrameTooBig
	}
	if mt == websocket.TextMessage && !utf8.Valid(data) {
		c.log.Warn("text frame not valid UTF-8: closing")
		c.close(websocket.CloseInvalidFramePayloadData, ReasonInvalidUTF8)
		return mt, nil, errFrameUTF8
	}
	return mt, data, nil
}

// maxKeptReadBuffer bounds the read buffer a socket keeps between frames
// (reuseReads): a larger frame's buffer goes with the next frame.
const maxKeptReadBuffer = 16 << 10

// readReused reads the rest of c.limited into c.rbuf.
func (c *conn) readReused() ([]byte, error) {
	return wire.ReadFrameInto(&c.limited, &c.rbuf, maxKeptReadBuffer)
}

// send queues item for the writer. It never blocks: when the queue is full
// the client is too slow and is disconnected (1013). It reports whether the
// item was queued.
func (c *conn) send(item any) bool {
	select {
	case <-c.closing:
		return false
	default:
	}
	c.qmu.Lock()
	select {
	case c.out <- item:
		c.last = item
		c.qmu.Unlock()
		return true
	default:
		c.last = nil
		c.qmu.Unlock()
		c.tooSlow()
		return false
	}
}

// tooSlow disconnects a client whose send queue is full.
func (c *conn) tooSlow() {
	c.log.Warn("client too slow: send queue full, disconnecting", "queue", cap(c.out))
	c.close(closeTryAgainLater, "Client too slow")
}

// close starts closing the socket with code and reason: the writer stops,
// a close frame is sent (bounded by WriteTimeout; none for code 0, a broken
// connection) and the connection is closed, which ends the read loop. Only
// the first call counts; it never blocks.
func (c *conn) close(code int, reason string) {
	c.closeOnce.Do(func() {
		c.cancel()
		close(c.closing)
		c.s.wg.Add(1)
		go func() {
			defer c.s.wg.Done()
			if code != 0 {
				msg := websocket.FormatCloseMessage(code, reason)
				err := c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(c.s.opts.WriteTimeout))
				if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
					c.log.Debug("close frame not sent", "error", err)
				}
			}
			_ = c.ws.Close()
		}()
	})
}

// finish is the read loop's exit: it closes the socket (normal closure if
// nothing else closed it first), waits for the writer, forgets the conn and
// releases Shutdown's wait.
func (c *conn) finish() {
	c.close(websocket.CloseNormalClosure, "")
	<-c.wrote
	c.s.untrack(c)
	c.s.leave()
}

// maxBatchFrames bounds the frames the writer gathers into one write.
const maxBatchFrames = 64

// writeLoop writes queued items and pings until the socket closes. The
// items already waiting when it wakes are written together (see
// batchConn).
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer close(c.wrote)
	var ping <-chan time.Time
	if c.s.opts.PingInterval > 0 {
		t := time.NewTicker(c.s.opts.PingInterval)
		defer t.Stop()
		ping = t.C
	}
	for {
		select {
		case <-c.closing:
			return
		case item := <-c.out:
			c.batch.begin()
			ok := c.write(item)
			// Gather what is queued; when nothing is, yield once so that
			// events being produced right now join this write.
			for n, yielded := 1, false; ok && n < maxBatchFrames; {
				select {
				case item = <-c.out:
					ok = c.write(item)
					n++
					continue
				default:
				}
				if yielded {
					break
				}
				yielded = true
				runtime.Gosched()
			}
			if err := c.batch.end(); err != nil {
				c.log.Debug("write failed", "error", err)
				c.close(0, "")
				return
			}
			if !ok {
				return
			}
		case <-ping:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.s.opts.WriteTimeout)); err != nil {
				c.log.Debug("ping failed", "error", err)
				c.close(0, "")
				return
			}
		}
	}
}

// write encodes and writes one queued item (into the current batch); false
// ends the writer (the socket is closing or broken).
func (c *conn) write(item any) bool {
	mt, data, err := c.encode(item)
	if err != nil {
		c.log.Error("encode frame", "error", err)
		return true
	}
	if len(data) == 0 {
		return true
	}
	if gate := c.s.writeGate; gate != nil {
		// A test's stalled client: what was gathered goes out first.
		if err := c.batch.end(); err != nil {
			c.close(0, "")
			return false
		}
		select {
		case <-gate:
		case <-c.closing:
			return false
		}
		c.batch.begin()
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
	if err := c.ws.WriteMessage(mt, data); err != nil {
		c.log.Debug("write failed", "error", err)
		c.close(0, "")
		return false
	}
	c.s.sockets.frames.Add(1)
	return true
}
