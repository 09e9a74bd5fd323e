package oob

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Client signs and sends requests over one connection. One goroutine at a
// time may use it.
type Client struct {
	ws    *websocket.Conn
	key   ed25519.PrivateKey
	clock func() time.Time
	mu    sync.Mutex
	// pushes received while waiting for a response, in order.
	pending [][]byte
}

// Dial connects to endpoint: "unix:PATH" for the Unix socket, else a ws:// or
// wss:// URL (or host:port, taken as ws://host:port/).
func Dial(ctx context.Context, endpoint string, key ed25519.PrivateKey) (*Client, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	url := endpoint
	if path, ok := strings.CutPrefix(endpoint, "unix:"); ok {
		d.NetDialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "unix", path)
		}
		url = "ws://oob/"
	} else if !strings.Contains(endpoint, "://") {
		url = "ws://" + endpoint + "/"
	}
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("oob: dial %s: %w", endpoint, err)
	}
	return &Client{ws: ws, key: key, clock: time.Now}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.ws.Close() }

// Do signs op (one request operation element, e.g. `<list-listeners/>`,
// written in NS or declaring it) and returns the response; pushes that
// arrive meanwhile are kept for Next.
func (c *Client) Do(ctx context.Context, op []byte) (*Response, []byte, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, nil, err
	}
	id := hex.EncodeToString(rnd[:])
	req, err := SignRequest(c.key, id, c.clock(), op)
	if err != nil {
		return nil, nil, err
	}
	return c.send(ctx, req)
}

// send writes a request document as is and waits for its response.
func (c *Client) send(ctx context.Context, req []byte) (*Response, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { _ = c.ws.SetReadDeadline(time.Now()) })
	defer stop()
	if err := c.ws.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, nil, fmt.Errorf("oob: send: %w", err)
	}
	for {
		_, b, err := c.ws.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, fmt.Errorf("oob: receive: %w", err)
		}
		root, err := rootName(b)
		if err != nil {
			return nil, nil, err
		}
		if root == "privileged-push" {
			c.pending = append(c.pending, b)
			continue
		}
		var r Response
		if err := xml.Unmarshal(b, &r); err != nil {
			return nil, nil, fmt.Errorf("oob: response: %w", err)
		}
		return &r, b, nil
	}
}

// Next returns the next push document (raw, and parsed).
func (c *Client) Next(ctx context.Context) (*Push, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b []byte
	if len(c.pending) > 0 {
		b, c.pending = c.pending[0], c.pending[1:]
	} else {
		stop := context.AfterFunc(ctx, func() { _ = c.ws.SetReadDeadline(time.Now()) })
		defer stop()
		var err error
		if _, b, err = c.ws.ReadMessage(); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, fmt.Errorf("oob: receive: %w", err)
		}
	}
	var p Push
	if err := xml.Unmarshal(b, &p); err != nil {
		return nil, nil, fmt.Errorf("oob: push: %w", err)
	}
	return &p, b, nil
}

// rootName is the local name of a document's root element.
func rootName(b []byte) (string, error) {
	d := xml.NewDecoder(strings.NewReader(string(b)))
	for {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("oob: frame: %w", err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			return s.Name.Local, nil
		}
	}
}

// ErrResponse wraps an <error> response as a Go error.
var ErrResponse = errors.New("oob: error response")

// Err is the response's <error> as an error wrapping ErrResponse (nil when
// the response is not an error).
func (r *Response) Err() error {
	if r.Payload.Error == nil {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrResponse, r.Payload.Error.Error())
}
