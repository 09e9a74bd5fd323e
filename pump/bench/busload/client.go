// Package busload drives the main bus the way real clients do: it logs in
// over HTTPS (/auth/login with password and TOTP), opens many TLS WebSocket
// clients on /ws and sends `@greeter` conversations on them, in a closed
// loop or at a fixed total rate, timing each from its send to its final
// output frame. Run measures an in-process organism and bus on loopback
// (`xmlpipe bench --bus`); Drive is the client side alone, which the crash
// soak test points at an `xmlpipe run` subprocess. It speaks the bus through
// the bus's client library (pump/bus/client): login, the socket's greeting
// and subscribe, and pipelined raw sends; what it adds is the load — many
// sockets, pacing, matching answers to sends and timing them.
package busload

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	busclient "github.com/xml-pipeline/xmlpipe/pump/bus/client"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// Sentinel errors of the client side: the bus client's.
var (
	// ErrLogin reports a login the server refused.
	ErrLogin = busclient.ErrLogin
	// ErrHandshake reports a socket whose first frame was not "connected"
	// (or a refused subscribe).
	ErrHandshake = busclient.ErrHandshake
)

// loginTimeout bounds one login request.
const loginTimeout = 30 * time.Second

// Credentials are a user's login.
type Credentials = auth.Credentials

// Login logs in at base (https://host:port) over POST /auth/login with tlsConf
// and returns the bearer token. A TOTP code is accepted once: log in once and
// share the token across sockets.
func Login(ctx context.Context, base string, tlsConf *tls.Config, c Credentials) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	tr := &http.Transport{TLSClientConfig: tlsConf.Clone()}
	defer tr.CloseIdleConnections()
	cl, err := busclient.Login(ctx, &http.Client{Transport: tr}, base, c)
	if err != nil {
		return "", fmt.Errorf("busload: %w", err)
	}
	return cl.Token, nil
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
	c *busclient.Conn
}

// Dial opens a /ws socket on t, reads its "connected" frame and, when
// t.Events is set, subscribes to those events.
func Dial(ctx context.Context, t Target) (*Conn, error) {
	c, err := busclient.Dial(ctx, busclient.Target{URL: t.URL, TLS: t.TLS, Token: t.Token})
	if err != nil {
		return nil, fmt.Errorf("busload: %w", err)
	}
	if len(t.Events) > 0 {
		if err := c.Subscribe(t.Events); err != nil {
			c.Close()
			return nil, fmt.Errorf("busload: %w", err)
		}
	}
	return &Conn{c: c}, nil
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

// frameTypes are the frame types the load generator reads: a decoded type
// that is one of them is this string, not a new one.
var frameTypes = []string{wire.TypeSent, wire.TypeOutput, wire.TypeError, wire.TypeMessage, wire.TypeComplete}

// rawFrame is a frame as readRaw decodes it: the string fields are views of
// the socket's read buffer, valid until the next read (Frame's fields,
// minus the allocations of copying them out).
type rawFrame struct {
	Type                                   string
	ID                                     int64
	ThreadID, MessageID, Text, Error, Code []byte
}

// frame copies f out of the read buffer.
func (f *rawFrame) frame() Frame {
	return Frame{Type: f.Type, ID: f.ID, ThreadID: string(f.ThreadID), MessageID: string(f.MessageID),
		Text: string(f.Text), Error: string(f.Error), Code: string(f.Code)}
}

// Read returns the next frame; message and complete events come back with
// their type only.
func (c *Conn) Read() (Frame, error) {
	f, err := c.readRaw()
	if err != nil {
		return Frame{}, err
	}
	return f.frame(), nil
}

// readRaw is Read without copying the frame out of the read buffer: the
// load generator's own loop, which looks at a frame once.
func (c *Conn) readRaw() (rawFrame, error) {
	data, err := c.c.ReadFrame()
	if err != nil {
		return rawFrame{}, err
	}
	for _, p := range skipped {
		if bytes.HasPrefix(data, p) {
			return rawFrame{Type: internType(p[9 : len(p)-2])}, nil
		}
	}
	if f, ok := scanFrame(data); ok {
		return f, nil
	}
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return rawFrame{}, fmt.Errorf("busload: frame %.200q: %w", data, err)
	}
	return rawFrame{Type: f.Type, ID: f.ID, ThreadID: []byte(f.ThreadID), MessageID: []byte(f.MessageID),
		Text: []byte(f.Text), Error: []byte(f.Error), Code: []byte(f.Code)}, nil
}

// internType returns typ as a string, one of frameTypes when it is one.
func internType(typ []byte) string {
	for _, t := range frameTypes {
		if string(typ) == t {
			return t
		}
	}
	return string(typ)
}

// fastFrame decodes a flat frame ("sent", "output", "error" without
// diagnostics: see wire.ScanFlat) without reflection, exactly as
// json.Unmarshal would (FuzzFastFrame); ok is false for anything else.
func fastFrame(data []byte) (f Frame, ok bool) {
	r, ok := scanFrame(data)
	if !ok {
		return Frame{}, false
	}
	return r.frame(), true
}

// scanFrame is fastFrame leaving the strings in data.
func scanFrame(data []byte) (f rawFrame, ok bool) {
	ok = wire.ScanFlat(data, func(key, val []byte, str bool) bool {
		if string(key) == "id" {
			if str {
				return false
			}
			n, err := strconv.ParseInt(string(val), 10, 64)
			f.ID = n
			return err == nil
		}
		if string(key) == "type" {
			if !str {
				return false
			}
			f.Type = internType(val)
			return true
		}
		var field *[]byte
		switch string(key) {
		case "thread_id":
			field = &f.ThreadID
		case "message_id":
			field = &f.MessageID
		case "text":
			field = &f.Text
		case "error":
			field = &f.Error
		case "code":
			field = &f.Code
		default:
			return true // a field the load generator does not read
		}
		if !str {
			return false
		}
		*field = val
		return true
	})
	if !ok {
		return rawFrame{}, false
	}
	return f, true
}

// Send sends {"type":"send","id":id,"raw":raw} without waiting (the
// answers are matched by id as they come).
func (c *Conn) Send(id int64, raw string) error { return c.c.SendRaw(id, raw) }

// SendOn is Send on a conversation thread the client chose (client.Conn.SendRawOn).
func (c *Conn) SendOn(id int64, raw, thread string) error { return c.c.SendRawOn(id, raw, thread) }

// Close sends a normal closure and closes the socket.
func (c *Conn) Close() error {
	_ = c.c.CloseFrame()
	return c.c.Close()
}

// Abort closes the socket without a close frame (it unblocks Read).
func (c *Conn) Abort() error { return c.c.Close() }
