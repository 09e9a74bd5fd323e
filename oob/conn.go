package oob

import (
	"container/list"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// conn is one client connection: requests are read and answered in order;
// pushes of its subscriptions go through a bounded queue (dropped, and
// logged, when the client does not keep up).
type conn struct {
	s    *Server
	ws   *websocket.Conn
	wmu  sync.Mutex // one writer at a time
	out  chan []byte
	done chan struct{}
	once sync.Once

	smu  sync.Mutex
	subs map[string]func() // subscription id → cancel

	// verified is set once a request's signature verified (read and set
	// by the read loop only): until then the connection lasts at most
	// until authBy — anyone on the host can connect, and an idle
	// connection held for good costs a file descriptor.
	verified bool
	authBy   time.Time
	// pending is its element of Server.unverified while it has not sent a
	// verified request (guarded by Server.mu).
	pending *list.Element
}

func newConn(s *Server, ws *websocket.Conn, authBy time.Time) *conn {
	return &conn{s: s, ws: ws, out: make(chan []byte, pushQueue), done: make(chan struct{}), subs: map[string]func(){},
		authBy: authBy}
}

// run serves the connection until the client leaves or the server closes.
func (c *conn) run() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.pushLoop() }()
	defer func() {
		c.close()
		wg.Wait()
	}()
	for {
		typ, msg, err := c.readRequest()
		if err != nil {
			return
		}
		if typ != websocket.TextMessage && typ != websocket.BinaryMessage {
			continue
		}
		resp := c.s.handle(msg, c)
		if err := c.write(resp); err != nil {
			return
		}
		if resp.after != nil {
			resp.after()
		}
	}
}

// readRequest reads the next message: a verified client may wait as long
// as it likes before sending one (it may be waiting for pushes), and then
// must send the whole message within frameTimeout; any other must have
// sent it by authBy.
func (c *conn) readRequest() (int, []byte, error) {
	if !c.verified {
		if !time.Now().Before(c.authBy) {
			c.s.security("unauthenticated OOB connection closed: no signed request in time", "within", c.s.opts.AuthTimeout)
			c.closeWith(websocket.ClosePolicyViolation, "no signed request in time")
			return 0, nil, errAuthTimeout
		}
		_ = c.ws.SetReadDeadline(c.authBy)
	}
	typ, r, err := c.ws.NextReader()
	if err != nil {
		c.timedOut(err)
		return typ, nil, err
	}
	if c.verified {
		_ = c.ws.SetReadDeadline(time.Now().Add(frameTimeout))
	}
	msg, err := io.ReadAll(r)
	if err != nil {
		c.timedOut(err)
		return typ, nil, err
	}
	return typ, msg, c.ws.SetReadDeadline(time.Time{})
}

// errAuthTimeout ends a connection that sent no validly signed request
// within Options.AuthTimeout.
var errAuthTimeout = errors.New("oob: no signed request in time")

// timedOut logs a read that failed at an unverified connection's
// deadline as a security event.
func (c *conn) timedOut(err error) {
	var ne net.Error
	if !c.verified && errors.As(err, &ne) && ne.Timeout() {
		c.s.security("unauthenticated OOB connection closed: no signed request in time", "within", c.s.opts.AuthTimeout)
	}
}

// write sends one frame.
func (c *conn) write(r reply) error {
	b, err := marshal(r.resp)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// push queues one push frame; false when the queue is full (dropped).
func (c *conn) push(p *Push) bool {
	b, err := marshal(p)
	if err != nil {
		c.s.log.Error("oob: push", "error", err)
		return false
	}
	select {
	case <-c.done:
		return false
	case c.out <- b:
		return true
	default:
		c.s.log.Warn("oob: push dropped: the client is not reading", "queued", len(c.out))
		return false
	}
}

func (c *conn) pushLoop() {
	for {
		select {
		case <-c.done:
			return
		case b := <-c.out:
			c.wmu.Lock()
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
			err := c.ws.WriteMessage(websocket.TextMessage, b)
			c.wmu.Unlock()
			if err != nil {
				c.close()
				return
			}
		}
	}
}

// addSub remembers a subscription of this connection.
func (c *conn) addSub(id string, cancel func()) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	select {
	case <-c.done:
		return false
	default:
	}
	c.subs[id] = cancel
	return true
}

// dropSub cancels a subscription; false when it is not this connection's.
func (c *conn) dropSub(id string) bool {
	c.smu.Lock()
	cancel, ok := c.subs[id]
	delete(c.subs, id)
	c.smu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// close ends the connection and its subscriptions (idempotent).
func (c *conn) close() { c.closeWith(websocket.CloseNormalClosure, "") }

// closeWith is close telling the client code and why.
func (c *conn) closeWith(code int, why string) {
	c.once.Do(func() {
		c.smu.Lock()
		close(c.done)
		subs := c.subs
		c.subs = map[string]func(){}
		c.smu.Unlock()
		for _, cancel := range subs {
			cancel()
		}
		c.wmu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, why),
			time.Now().Add(time.Second))
		c.wmu.Unlock()
		_ = c.ws.Close()
	})
}

// marshal renders a root with the XML declaration.
func marshal(v any) ([]byte, error) {
	b, err := xml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}
