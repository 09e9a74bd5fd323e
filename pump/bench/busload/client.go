// Package busload drives the main bus the way real clients do: it logs in
// over HTTPS (/auth/login with password and TOTP), opens many TLS WebSocket
// clients on /ws and sends `@greeter` conversations on them, in a closed
// loop or at a fixed total rate, timing each from its send to its final
// output frame. Run measures an in-process organism and bus on loopback
// (`xmlpipe bench --bus`); Drive is the client side alone, which the crash
// soak test points at an `xmlpipe run` subprocess.
package busload

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// Sentinel errors of the client side.
var (
	// ErrLogin reports a login the server refused.
	ErrLogin = errors.New("busload: login refused")
	// ErrHandshake reports a socket whose first frame was not "connected".
	ErrHandshake = errors.New("busload: unexpected first frame")
)

// loginTimeout bounds one login request.
const loginTimeout = 30 * time.Second

// Credentials are a user's login.
type Credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
	TOTP     string `json:"totp"`
}

// Login logs in at base (https://host:port) over POST /auth/login with tlsConf
// and returns the bearer token. A TOTP code is accepted once: log in once and
// share the token across sockets.
func Login(ctx context.Context, base string, tlsConf *tls.Config, c Credentials) (string, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/auth/login",
		bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("busload: login: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{TLSClientConfig: tlsConf.Clone()}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", fmt.Errorf("busload: login: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("busload: login: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %d %s", ErrLogin, resp.StatusCode, bytes.TrimSpace(raw))
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Token == "" {
		return "", fmt.Errorf("%w: no token in %q", ErrLogin, raw)
	}
	return out.Token, nil
}

// Target is where clients connect: the /ws URL (wss://host:port/ws), the
// client TLS configuration and the bearer token every socket presents.
// Events, when set, are the event types every socket subscribes to as soon
// as it is connected (nil: no subscribe request, every event).
type Target struct {
	URL    string
	TLS    *tls.Config
	Token  string
	Events []string
}

// Conn is one /ws client socket.
type Conn struct {
	ws *websocket.Conn

	// raw and rawJSON are the text of the last send and its JSON string;
	// buf is Send's frame buffer.
	raw     string
	rawJSON []byte
	buf     []byte
}

// Dial opens a /ws socket on t, reads its "connected" frame and, when
// t.Events is set, subscribes to those events.
func Dial(ctx context.Context, t Target) (*Conn, error) {
	d := websocket.Dialer{TLSClientConfig: t.TLS.Clone(), HandshakeTimeout: 30 * time.Second}
	ws, resp, err := d.DialContext(ctx, t.URL, http.Header{"Authorization": {"Bearer " + t.Token}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("busload: dial %s: %w (HTTP %d)", t.URL, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("busload: dial %s: %w", t.URL, err)
	}
	c := &Conn{ws: ws}
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := c.Read()
	_ = ws.SetReadDeadline(time.Time{})
	if err != nil {
		ws.Close()
		return nil, err
	}
	if f.Type != "connected" {
		ws.Close()
		return nil, fmt.Errorf("%w: %q", ErrHandshake, f.Type)
	}
	if len(t.Events) > 0 {
		if err := c.subscribe(t.Events); err != nil {
			ws.Close()
			return nil, err
		}
	}
	return c, nil
}

// subscribe asks for events and waits for the "subscribed" answer (other
// frames before it, governance pushes, are skipped).
func (c *Conn) subscribe(events []string) error {
	req := struct {
		Type   string   `json:"type"`
		Events []string `json:"events"`
	}{wire.TypeSubscribe, events}
	if err := c.ws.WriteJSON(req); err != nil {
		return fmt.Errorf("busload: subscribe: %w", err)
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.ws.SetReadDeadline(time.Time{})
	for {
		f, err := c.Read()
		switch {
		case err != nil:
			return fmt.Errorf("busload: subscribe: %w", err)
		case f.Type == wire.TypeSubscribed:
			return nil
		case f.Type == wire.TypeError:
			return fmt.Errorf("%w: subscribe refused: %s (%s)", ErrHandshake, f.Error, f.Code)
		}
	}
}

// Frame is the part of a server frame the load generator looks at. ID is
// the request id the server echoes (the client sends integers); MessageID
// is the acknowledged message's id (the SHA-256 of its canonical envelope)
// when the server names it.
type Frame struct {
	Type      string `json:"type"`
	ID        int64  `json:"id"`
	ThreadID  string `json:"thread_id"`
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Error     string `json:"error"`
	Code      string `json:"code"`
}

// skipped are frame prefixes the load generator does not decode: the
// server writes "type" first, so a message event (the bulk of the traffic,
// with its payload XML) is recognised without parsing it.
var skipped = [][]byte{[]byte(`{"type":"message",`), []byte(`{"type":"complete",`)}

// Read returns the next frame; message and complete events come back with
// their type only.
func (c *Conn) Read() (Frame, error) {
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		return Frame{}, err
	}
	for _, p := range skipped {
		if bytes.HasPrefix(data, p) {
			return Frame{Type: string(p[9 : len(p)-2])}, nil
		}
	}
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return Frame{}, fmt.Errorf("busload: frame %.200q: %w", data, err)
	}
	return f, nil
}

// Send sends {"type":"send","id":id,"raw":raw}. It must not be called
// concurrently with itself or Close. The text's JSON is encoded once: a
// client sends the same text again and again.
func (c *Conn) Send(id int64, raw string) error {
	if c.rawJSON == nil || raw != c.raw {
		q, err := json.Marshal(raw)
		if err != nil {
			return fmt.Errorf("busload: send: %w", err)
		}
		c.raw, c.rawJSON = raw, q
	}
	b := append(c.buf[:0], `{"type":"send","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"raw":`...)
	b = append(b, c.rawJSON...)
	c.buf = append(b, '}')
	return c.ws.WriteMessage(websocket.TextMessage, c.buf)
}

// Close sends a normal closure and closes the socket.
func (c *Conn) Close() error {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	return c.ws.Close()
}

// Abort closes the socket without a close frame (it unblocks Read).
func (c *Conn) Abort() error { return c.ws.Close() }
