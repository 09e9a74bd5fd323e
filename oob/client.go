package oob

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

// ErrNotOOB is wrapped by Dial when the endpoint answers, but not as an
// OOB channel (an HTTP server, such as the main bus).
var ErrNotOOB = errors.New("not an OOB channel")

// plainToTLS begins the answer Go's HTTPS server gives a plain HTTP request.
const plainToTLS = "Client sent an HTTP request to an HTTPS server"

// Dial connects to endpoint: "unix:PATH" for the Unix socket, else a ws:// or
// wss:// URL (or host:port, taken as ws://host:port/). A wss:// server is
// verified against the system roots (see DialTLS).
func Dial(ctx context.Context, endpoint string, key ed25519.PrivateKey) (*Client, error) {
	return DialTLS(ctx, endpoint, key, nil)
}

// DialTLS is Dial verifying a wss:// server with tlsConf (nil: the system
// roots), e.g. one trusting the certificate of a remote channel's oob.tls.
func DialTLS(ctx context.Context, endpoint string, key ed25519.PrivateKey, tlsConf *tls.Config) (*Client, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsConf}
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
	ws, resp, err := d.DialContext(ctx, url, nil)
	if err != nil {
		if resp != nil {
			err = notOOB(resp, err)
		}
		return nil, fmt.Errorf("oob: dial %s: %w", endpoint, err)
	}
	return &Client{ws: ws, key: key, clock: time.Now}, nil
}

// notOOB explains a failed handshake the endpoint answered with an HTTP
// response: an OOB channel upgrades every request without an Origin.
func notOOB(resp *http.Response, err error) error {
	if !errors.Is(err, websocket.ErrBadHandshake) {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(string(body), plainToTLS) {
		return fmt.Errorf("it speaks HTTPS: %w (the main bus? the OOB channel is oob.bind:oob.port, 127.0.0.1:8766 by default)", ErrNotOOB)
	}
	return fmt.Errorf("%w: it answered HTTP %s", ErrNotOOB, resp.Status)
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
