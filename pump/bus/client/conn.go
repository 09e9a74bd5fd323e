package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// ErrHandshake: the socket's first frame was not "connected", or the bus
// refused the subscribe request.
var ErrHandshake = errors.New("unexpected first frame")

// DefaultTimeout bounds a socket's handshake, its greeting and a
// synchronous subscribe when Target.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Target is a /ws socket to open: its URL (wss://host:port/ws), the client
// TLS configuration and the bearer token it presents.
type Target struct {
	URL   string
	TLS   *tls.Config
	Token string
	// Timeout bounds the handshake and the greeting, and each write when
	// WriteTimeout is unset (0: DefaultTimeout).
	Timeout time.Duration
	// WriteTimeout bounds each JSON frame WriteJSON writes (0: none).
	WriteTimeout time.Duration
}

// Conn is one /ws socket past its "connected" greeting. Reads are the
// caller's (one reader at a time); writes are serialised.
type Conn struct {
	ws           *websocket.Conn
	timeout      time.Duration
	writeTimeout time.Duration

	// Username and Role are the greeting's: who the token logged in.
	Username, Role string

	wmu sync.Mutex // one writer at a time
	// raw and rawJSON are the text of SendRaw's last frame and its JSON
	// string; buf is its frame buffer.
	raw     string
	rawJSON []byte
	buf     []byte

	// rbuf is ReadFrame's buffer, reused from frame to frame.
	rbuf []byte
}

// Dial opens a /ws socket on t and reads its "connected" frame (anything
// else wraps ErrHandshake).
func Dial(ctx context.Context, t Target) (*Conn, error) {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := websocket.Dialer{TLSClientConfig: t.TLS.Clone(), HandshakeTimeout: timeout}
	ws, resp, err := d.DialContext(ctx, t.URL, http.Header{"Authorization": {"Bearer " + t.Token}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %d)", t.URL, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial %s: %w", t.URL, err)
	}
	c := &Conn{ws: ws, timeout: timeout, writeTimeout: t.WriteTimeout}
	var hello wire.Connected
	_ = ws.SetReadDeadline(time.Now().Add(timeout))
	_, data, err := ws.ReadMessage()
	_ = ws.SetReadDeadline(time.Time{})
	if err == nil {
		err = json.Unmarshal(data, &hello)
	}
	if err != nil || hello.Type != wire.TypeConnected {
		ws.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrHandshake, err)
		}
		return nil, fmt.Errorf("%w: %q", ErrHandshake, hello.Type)
	}
	c.Username, c.Role = hello.Username, hello.Role
	return c, nil
}

// Subscribe asks for events and waits for the "subscribed" answer, skipping
// the frames before it (governance pushes). It reads the socket: call it
// before anything else does.
func (c *Conn) Subscribe(events []string) error {
	if err := c.WriteJSON(wire.Request{Head: wire.Head{Type: wire.TypeSubscribe}, Events: events}); err != nil {
		return fmt.Errorf("client: subscribe: %w", err)
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(c.timeout))
	defer c.ws.SetReadDeadline(time.Time{})
	for {
		data, err := c.ReadMessage()
		if err != nil {
			return fmt.Errorf("client: subscribe: %w", err)
		}
		var e wire.Error
		if json.Unmarshal(data, &e) != nil {
			continue
		}
		switch e.Type {
		case wire.TypeSubscribed:
			return nil
		case wire.TypeError:
			return fmt.Errorf("%w: subscribe refused: %s (%s)", ErrHandshake, e.Error, e.Code)
		}
	}
}

// ReadMessage returns the next frame's bytes.
func (c *Conn) ReadMessage() ([]byte, error) {
	_, data, err := c.ws.ReadMessage()
	return data, err
}

// maxKeptReadBuffer bounds the buffer ReadFrame keeps between frames: a
// larger frame's buffer goes with the next frame.
const maxKeptReadBuffer = 64 << 10

// ReadFrame returns the next frame's bytes in a buffer the Conn reuses:
// they are valid until the next ReadFrame (ReadMessage returns a copy of its
// own). A reader that looks at each frame once, a load generator, makes no
// garbage of its frames with it.
func (c *Conn) ReadFrame() ([]byte, error) {
	_, r, err := c.ws.NextReader()
	if err != nil {
		return nil, err
	}
	return wire.ReadFrameInto(r, &c.rbuf, maxKeptReadBuffer)
}

// WriteJSON writes v as one frame.
func (c *Conn) WriteJSON(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writeTimeout > 0 {
		_ = c.ws.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	}
	return c.ws.WriteJSON(v)
}

// SendRaw writes {"type":"send","id":id,"raw":raw} without waiting for
// anything: a pipelining client sends many and matches the answers by id
// itself. The text's JSON is encoded once while raw stays the same (a load
// generator sends the same text again and again).
func (c *Conn) SendRaw(id int64, raw string) error { return c.SendRawOn(id, raw, "") }

// SendRawOn is SendRaw on the conversation thread (a lower-case UUID v4; ""
// lets the bus begin a new one): a new thread id the client chose begins a
// conversation, as the Python reference's clients begin every one.
func (c *Conn) SendRawOn(id int64, raw, thread string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.rawJSON == nil || raw != c.raw {
		q, err := json.Marshal(raw)
		if err != nil {
			return fmt.Errorf("client: send: %w", err)
		}
		c.raw, c.rawJSON = raw, q
	}
	b := append(c.buf[:0], `{"type":"send","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"raw":`...)
	b = append(b, c.rawJSON...)
	if thread != "" {
		q, err := json.Marshal(thread) // any string stays valid JSON; the bus refuses a non-UUID
		if err != nil {
			return fmt.Errorf("client: send: %w", err)
		}
		b = append(b, `,"thread_id":`...)
		b = append(b, q...)
	}
	c.buf = append(b, '}')
	return c.ws.WriteMessage(websocket.TextMessage, c.buf)
}

// CloseFrame sends a normal closure; the bus answers with its own and
// closes, which ends the reader's ReadMessage.
func (c *Conn) CloseFrame() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
}

// Close closes the socket at once (it unblocks ReadMessage).
func (c *Conn) Close() error { return c.ws.Close() }
