package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine bounds one line of stdio input (one message or batch).
const DefaultMaxLine = 16 << 20

// lineConn is the stdio connection Serve hands the SDK: newline-delimited
// JSON-RPC 2.0 whose every line is validated before the SDK sees it (the
// SDK's own stdio transport ends the session at the first bad line). A bad
// line is answered here (-32700, -32600) and the session goes on. It keeps
// the requests the SDK has not answered yet, so that
//   - the answer to a request the client cancelled (notifications/cancelled)
//     is not sent;
//   - a batch is answered with one array once all its requests are;
//   - at the end of input Read returns io.EOF only once every request read
//     has been answered (or eofWait has passed): the SDK cannot write after
//     it has seen the end of its input.
type lineConn struct {
	out     io.Writer
	maxLine int
	eofWait time.Duration
	log     *slog.Logger

	lines     chan inputLine
	closed    chan struct{}
	closeOnce sync.Once
	eof       chan struct{} // closed when the input has ended
	queue     []jsonrpc.Message

	wmu sync.Mutex // one line written at a time

	mu      sync.Mutex
	pending map[jsonrpc.ID]*pendingCall
	changed chan struct{} // closed and replaced whenever pending shrinks
	version string        // the negotiated protocol version
	initID  *jsonrpc.ID   // the initialize request, until it is answered
}

// inputLine is one line read, or why reading stopped.
type inputLine struct {
	data    []byte
	tooLong bool
	err     error
}

// pendingCall is a request handed to the SDK and not answered yet.
type pendingCall struct {
	cancelled bool
	batch     *batchReplies
}

// batchReplies collects the answers of one batch.
type batchReplies struct {
	remaining int
	replies   []json.RawMessage
}

var _ sdk.Connection = (*lineConn)(nil)

func newLineConn(in io.Reader, out io.Writer, maxLine int, eofWait time.Duration, log *slog.Logger) *lineConn {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	c := &lineConn{out: out, maxLine: maxLine, eofWait: eofWait, log: log, lines: make(chan inputLine),
		closed: make(chan struct{}), eof: make(chan struct{}), pending: map[jsonrpc.ID]*pendingCall{},
		changed: make(chan struct{})}
	go c.readLoop(in)
	return c
}

// readLoop reads lines until the input ends or the connection closes (a
// read blocked on a terminal or pipe then ends with the process).
func (c *lineConn) readLoop(in io.Reader) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		l := c.readLine(br)
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine returns the next line without its line end; a line longer than
// maxLine is skipped and reported as tooLong.
func (c *lineConn) readLine(br *bufio.Reader) inputLine {
	var (
		buf     []byte
		tooLong bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > c.maxLine+2 { // +2: the line end
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (len(buf) > 0 || tooLong):
			// The last line has no line end: deliver it; the error comes next.
			return inputLine{data: trimEOL(buf), tooLong: tooLong}
		case err != nil:
			return inputLine{err: err}
		}
		return inputLine{data: trimEOL(buf), tooLong: tooLong}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Read returns the next valid message; invalid lines are answered on the
// way. At the end of input it waits for the answers still owed, then
// returns io.EOF.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l := <-c.lines:
			if l.err != nil {
				return nil, c.endOfInput(ctx, l.err)
			}
			c.accept(l)
		}
	}
}

// accept validates one line, answers what is invalid and queues the rest.
func (c *lineConn) accept(l inputLine) {
	if l.tooLong {
		c.writeErrors(nil, rpcError{Code: codeParseError,
			Message: fmt.Sprintf("Parse error: the line is longer than %d bytes", c.maxLine)})
		return
	}
	if len(bytes.TrimSpace(l.data)) == 0 {
		return // blank lines separate nothing
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	p := parseLine(l.data, version == "" || version < noBatchesSince, version)
	var b *batchReplies
	if p.batch {
		b = &batchReplies{}
	}
	c.writeErrors(b, p.errs...)
	for _, m := range p.msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			if !req.IsCall() {
				if req.Method == "notifications/cancelled" {
					c.cancelled(req.Params)
				}
			} else if !c.track(req, b) {
				c.writeErrors(b, rpcError{Code: codeInvalidRequest,
					Message: fmt.Sprintf("Invalid Request: request id %v is already in use", req.ID.Raw())})
				continue
			}
		}
		c.queue = append(c.queue, m)
	}
	if b != nil {
		c.mu.Lock()
		var out []json.RawMessage
		if b.remaining == 0 {
			out, b.replies = b.replies, nil
		}
		c.mu.Unlock()
		if len(out) > 0 {
			c.writeBatch(out)
		}
	}
}

// track records a request handed to the SDK; false when its id is taken.
func (c *lineConn) track(req *jsonrpc.Request, b *batchReplies) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.pending[req.ID]; dup {
		return false
	}
	c.pending[req.ID] = &pendingCall{batch: b}
	if b != nil {
		b.remaining++
	}
	if req.Method == "initialize" {
		id := req.ID
		c.initID = &id
		// Until the answer says which version was agreed, the one asked for
		// rules the lines read meanwhile: the server agrees to it when it
		// knows it, else answers with its own latest (later still).
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.ProtocolVersion != "" {
			c.version = p.ProtocolVersion
		}
	}
	return true
}

// cancelled marks the request a notifications/cancelled names: its answer
// is not sent (the SDK cancels its handler's context itself).
func (c *lineConn) cancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pc := c.pending[id]; pc != nil {
		pc.cancelled = true
	}
}

// Write sends a message; the answer to a cancelled request is dropped and
// the answers of a batch are held until the batch is complete.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.writeLine(data)
	}
	c.mu.Lock()
	pc := c.pending[resp.ID]
	if pc != nil {
		delete(c.pending, resp.ID)
		close(c.changed)
		c.changed = make(chan struct{})
	}
	if c.initID != nil && *c.initID == resp.ID {
		c.initID = nil
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
			c.version = r.ProtocolVersion
		}
	}
	switch {
	case pc != nil && pc.cancelled:
		c.mu.Unlock()
		c.log.Debug("mcp: answer to a cancelled request dropped", "id", resp.ID.Raw())
		return nil
	case pc != nil && pc.batch != nil:
		b := pc.batch
		b.replies = append(b.replies, data)
		b.remaining--
		var out []json.RawMessage
		if b.remaining == 0 {
			out, b.replies = b.replies, nil
		}
		c.mu.Unlock()
		if len(out) == 0 {
			return nil
		}
		return c.writeBatch(out)
	}
	c.mu.Unlock()
	return c.writeLine(data)
}

// writeErrors answers invalid messages: into batch b, or one line each.
func (c *lineConn) writeErrors(b *batchReplies, errs ...rpcError) {
	for _, e := range errs {
		data, err := json.Marshal(e)
		if err != nil {
			continue // cannot happen: every part is valid JSON
		}
		if b != nil {
			c.mu.Lock()
			b.replies = append(b.replies, data)
			c.mu.Unlock()
			continue
		}
		if err := c.writeLine(data); err != nil {
			c.log.Warn("mcp: cannot write an error response", "error", err)
		}
	}
}

// writeBatch writes the answers of a batch as one array.
func (c *lineConn) writeBatch(replies []json.RawMessage) error {
	data, err := json.Marshal(replies)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

func (c *lineConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

// endOfInput waits (at most eofWait) until every request read has been
// answered, then reports the end of the session.
func (c *lineConn) endOfInput(ctx context.Context, err error) error {
	close(c.eof)
	if !errors.Is(err, io.EOF) {
		c.log.Warn("mcp: reading the input failed", "error", err)
	}
	deadline := time.NewTimer(c.eofWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n == 0 {
			return io.EOF
		}
		select {
		case <-changed:
		case <-deadline.C:
			c.log.Warn("mcp: input ended; requests left unanswered", "requests", n, "after", c.eofWait)
			return io.EOF
		case <-c.closed:
			return io.EOF
		case <-ctx.Done():
			return io.EOF
		}
	}
}

// Close stops reading (the process's stdin itself is left open).
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: stdio has one session.
func (*lineConn) SessionID() string { return "" }

// connTransport hands the SDK one existing connection.
type connTransport struct{ c sdk.Connection }

// Connect implements sdk.Transport.
func (t connTransport) Connect(context.Context) (sdk.Connection, error) { return t.c, nil }
