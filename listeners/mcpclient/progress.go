package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRoutes hands a server's progress notifications to the calls
// that asked for them, by progress token.
type progressRoutes struct {
	next  atomic.Uint64
	calls sync.Map // token (string) → func(*sdk.ProgressNotificationParams)
}

// add routes the notifications of a new token to fn until remove runs.
func (r *progressRoutes) add(fn func(*sdk.ProgressNotificationParams)) (token string, remove func()) {
	token = "xmlpipe-" + strconv.FormatUint(r.next.Add(1), 10)
	r.calls.Store(token, fn)
	return token, func() { r.calls.Delete(token) }
}

// deliver hands p to the call its token names, if it is still running.
func (r *progressRoutes) deliver(p *sdk.ProgressNotificationParams) {
	if p == nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	if fn, ok := r.calls.Load(token); ok {
		fn.(func(*sdk.ProgressNotificationParams))(p)
	}
}

// progressText is what a progress notification of listener says: its
// message, else how far the call got.
func progressText(listener string, p *sdk.ProgressNotificationParams) string {
	switch {
	case p.Message != "":
		return p.Message
	case p.Total > 0:
		return fmt.Sprintf("%s: %g of %g", listener, p.Progress, p.Total)
	}
	return fmt.Sprintf("%s: %g", listener, p.Progress)
}

// progressConn hands a stdio server's progress notifications to routes as
// they are read, in the connection's reading order: each one before the
// answer that follows it. (The SDK's client would hand them to its
// handler on a goroutine of their own, the last ones after the call has
// returned.) They do not reach the SDK.
type progressConn struct {
	sdk.Connection
	routes *progressRoutes
}

func (c progressConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		r, ok := msg.(*jsonrpc.Request)
		if !ok || r.Method != "notifications/progress" || r.IsCall() {
			return msg, nil
		}
		c.routes.deliverRaw(r.Params)
	}
}

// deliverRaw is deliver of a notification's params as sent.
func (r *progressRoutes) deliverRaw(params json.RawMessage) {
	var p sdk.ProgressNotificationParams
	if json.Unmarshal(params, &p) == nil {
		r.deliver(&p)
	}
}

// progressTripper hands the progress notifications of a streamable HTTP
// server's event streams to routes as the SDK reads them, each before the
// events that follow it (the answer of its call): the SDK's client
// connection cannot be wrapped as a stdio one is.
type progressTripper struct {
	next   http.RoundTripper
	routes *progressRoutes
}

func (t progressTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &progressTap{ReadCloser: resp.Body, routes: t.routes}
	return resp, nil
}

// maxTapLine bounds the event line a progressTap looks into; a longer one
// (a large answer, no progress notification) is passed on unlooked at.
const maxTapLine = 64 << 10

// progressTap watches an event stream's data lines pass and delivers the
// progress notifications among them.
type progressTap struct {
	io.ReadCloser
	routes *progressRoutes
	line   []byte
	long   bool // in a line over maxTapLine
}

func (t *progressTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.add(rest)
			break
		}
		t.add(rest[:i])
		if !t.long {
			t.event(bytes.TrimSuffix(t.line, []byte("\r")))
		}
		t.line, t.long = t.line[:0], false
		rest = rest[i+1:]
	}
	return n, err
}

func (t *progressTap) add(b []byte) {
	if t.long || len(t.line)+len(b) > maxTapLine {
		t.long = true
		return
	}
	t.line = append(t.line, b...)
}

// event delivers the progress notification a data line holds, if any.
func (t *progressTap) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"notifications/progress"`)) {
		return
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &m) == nil && m.Method == "notifications/progress" && m.ID == nil {
		t.routes.deliverRaw(m.Params)
	}
}
