package bus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Close codes the bus uses besides gorilla's named ones.
const (
	// closeTryAgainLater (1013) closes a client whose send queue overflowed.
	closeTryAgainLater = 1013
)

// encoder turns one queued item into a WebSocket message; ok false skips it.
type encoder func(item any) (messageType int, data []byte, ok bool)

// conn is one WebSocket: a bounded send queue drained by one writer
// goroutine (which also pings), and a close path that never blocks the
// caller — the pump delivers into send, so a slow client must never stall it.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	log    *slog.Logger
	encode encoder

	ctx    context.Context
	cancel context.CancelFunc

	out       chan any
	closing   chan struct{}
	closeOnce sync.Once
	wrote     chan struct{} // closed when the writer goroutine has returned
}

// newConn wraps an upgraded socket and starts its writer. The caller calls
// keepalive once the client is authenticated, runs the read loop and calls
// finish when it ends.
func (s *Server) newConn(ws *websocket.Conn, log *slog.Logger, encode encoder) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{s: s, ws: ws, log: log, encode: encode, ctx: ctx, cancel: cancel,
		out: make(chan any, s.opts.SendQueue), closing: make(chan struct{}), wrote: make(chan struct{})}
	ws.SetReadLimit(s.opts.MaxFrameBytes)
	s.track(c)
	s.wg.Add(1)
	go c.writeLoop()
	return c
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
	mt, data, err := c.ws.ReadMessage()
	if err == nil {
		c.touchRead()
	}
	return mt, data, err
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
	select {
	case c.out <- item:
		return true
	default:
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
// nothing else closed it first), waits for the writer and forgets the conn.
func (c *conn) finish() {
	c.close(websocket.CloseNormalClosure, "")
	<-c.wrote
	c.s.untrack(c)
}

// writeLoop writes queued items and pings until the socket closes.
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
			mt, data, ok := c.encode(item)
			if !ok {
				continue
			}
			if gate := c.s.writeGate; gate != nil {
				select {
				case <-gate:
				case <-c.closing:
					return
				}
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
			if err := c.ws.WriteMessage(mt, data); err != nil {
				c.log.Debug("write failed", "error", err)
				c.close(0, "")
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
