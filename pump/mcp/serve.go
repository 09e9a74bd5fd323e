package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultDrain bounds how long the calls still running when the input ends
// may take before they are cancelled.
const DefaultDrain = 30 * time.Second

// eofGrace is how long, past the drain, the session still waits for the
// answers of cancelled calls to be written.
const eofGrace = 5 * time.Second

// errInputEnded is the cause of calls cancelled after the input ended.
var errInputEnded = errors.New("the client's input ended before the answer")

// StdioOptions configure ServeStdio.
type StdioOptions struct {
	// Drain bounds how long the calls still running when the input ends may
	// take; then they are cancelled (their conversations killed) and
	// answered with a tool error (default DefaultDrain).
	Drain time.Duration
	// MaxLine bounds one input line (default DefaultMaxLine).
	MaxLine int
}

// ServeStdio serves the bridge's tools as newline-delimited JSON-RPC 2.0
// over in and out (the MCP stdio transport) until the input ends or ctx
// does. Every line is validated first: one that is not JSON is answered
// with -32700, one that is no JSON-RPC message (or a batch the negotiated
// protocol version forbids) with -32600, and the session goes on. When the
// input ends, every request already read is answered before ServeStdio
// returns: calls still running after Drain are cancelled and answered with
// a tool error. When ctx ends, running calls are cancelled at once.
func (b *Bridge) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts StdioOptions) error {
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	conn := newLineConn(in, out, opts.MaxLine, opts.Drain+eofGrace, b.opts.Logger)
	defer conn.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-conn.eof:
		case <-ctx.Done():
			b.cancelCalls(ErrClosed)
			return
		case <-done:
			return
		}
		t := time.NewTimer(opts.Drain)
		defer t.Stop()
		select {
		case <-t.C:
			b.cancelCalls(fmt.Errorf("%w (waited %v)", errInputEnded, opts.Drain))
		case <-ctx.Done():
			b.cancelCalls(ErrClosed)
		case <-done:
		}
	}()
	// Not the SDK's Server.Run: it logs a context that ends — a stop
	// asked for (Ctrl-C) — as an error.
	ss, err := b.Server().Connect(ctx, connTransport{conn}, nil)
	if err != nil {
		return err
	}
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-closed
		err = ctx.Err()
	case err = <-closed:
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// maxHTTPBody bounds one POST body of HTTPHandler.
const maxHTTPBody = DefaultMaxLine

// HTTPHandler serves the bridge's tools over the streamable HTTP transport.
// A POST body that is not JSON is answered 400 with a JSON-RPC -32700
// error, one that holds no valid JSON-RPC message (or a batch where the
// protocol version forbids it) 400 with -32600 — as JSON-RPC, where the
// SDK would answer with plain text. A call whose POST ends before its
// answer (the client disconnected) and the calls of a session the client
// closes (DELETE) are stopped: their conversations are killed, not left
// running until the timeout. A session without a request for
// Options.SessionIdle is closed, so clients that vanish without closing
// theirs (DELETE) do not hold one each for good; Close closes every one.
// A body over DefaultMaxLine is answered 413 with a JSON-RPC -32700 error;
// one under it reaches the tool (the SDK's smaller cap does not apply).
func (b *Bridge) HTTPHandler() http.Handler {
	return b.httpHandler(b.Server())
}

func (b *Bridge) httpHandler(server *sdk.Server) http.Handler {
	idle := b.opts.SessionIdle
	if idle < 0 {
		idle = 0 // the SDK's "never"
	}
	// The SDK's own cap (4 MiB) would answer a body between it and ours
	// with plain text: ours is the one, refused as JSON-RPC below.
	next := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{SessionTimeout: idle, MaxRequestBodyBytes: maxHTTPBody})
	// Close ends the sessions of clients that never closed theirs (DELETE):
	// each holds goroutines until SessionIdle otherwise. It does so once
	// the requests being served are done: a running call Close cancelled
	// is answered (a tool error, ErrClosed) on its session first.
	drain := &httpDrain{then: func() {
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
	}}
	context.AfterFunc(b.life, drain.end)
	owners := newSessionOwners(b.opts.MaxSessions, b.opts.MaxSessionsPerAddr, b.evictIdle)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		drain.enter()
		defer drain.leave()
		defer owners.enter(r.Header.Get(sessionHeader))()
		if r.Method == http.MethodDelete {
			// The SDK closes the session only once its running calls end.
			b.cancelOrigin(origin{session: r.Header.Get(sessionHeader)}, ErrSessionClosed)
		}
		if r.Method == http.MethodGet {
			// A standalone stream lasts as long as its client; it ends
			// when the bridge closes, not only when the client goes.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(b.life, cancel)
			defer stop()
			r = r.WithContext(ctx)
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
		if err != nil {
			writeRPCError(w, http.StatusRequestEntityTooLarge, rpcError{Code: codeParseError,
				Message: fmt.Sprintf("Parse error: %v", err)})
			return
		}
		version := r.Header.Get("Mcp-Protocol-Version")
		if version == "" {
			version = "2025-03-26" // the spec's assumption without the header
		}
		p := parseLine(body, version < noBatchesSince, version)
		if len(p.errs) > 0 {
			writeRPCError(w, http.StatusBadRequest, p.errs[0])
			return
		}
		if r.Header.Get(sessionHeader) == "" {
			// Without a session id the request opens a session.
			host := remoteHost(r.RemoteAddr)
			evict, refused := owners.admit(host, server)
			if refused != withinBounds {
				msg := fmt.Sprintf("Server busy: %d sessions are open, the most it keeps, none idle; retry later",
					b.opts.MaxSessions)
				if refused == errHostBound {
					msg = fmt.Sprintf("Server busy: %d sessions are open from %s, the most one address keeps, none idle; close one (DELETE) or retry later",
						b.opts.MaxSessionsPerAddr, host)
				}
				w.Header().Set("Retry-After", strconv.Itoa(sessionRetryAfter))
				writeRPCError(w, http.StatusServiceUnavailable, rpcError{ID: recoverID(body), Code: codeServerBusy, Message: msg})
				return
			}
			if evict != "" {
				b.closeIdle(server, evict, host)
			}
			// The session counts as the host's before its client learns
			// its id, so that its next request finds it counted.
			hw := &headerHook{ResponseWriter: w}
			hw.fn = func() { owners.opened(host, w.Header().Get(sessionHeader)) }
			defer hw.done()
			w = hw
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		done := b.tagRequest(r)
		defer done()
		next.ServeHTTP(w, r)
	})
}

// closeIdle closes session, the idle one given up to make room for a new
// one from host (sessionOwners.admit): its client's next request is
// answered 404, which tells it to open a new session.
func (b *Bridge) closeIdle(server *sdk.Server, session, host string) {
	for ss := range server.Sessions() {
		if ss.ID() == session {
			b.opts.Logger.Info("mcp: at a session bound, closed the session idle longest to make room",
				"session", session, "for", host, "max_sessions", b.opts.MaxSessions,
				"max_sessions_per_addr", b.opts.MaxSessionsPerAddr)
			_ = ss.Close()
			return
		}
	}
}

// sessionRetryAfter is the Retry-After (seconds) of a session refused
// because the bound is reached.
const sessionRetryAfter = 30

func writeRPCError(w http.ResponseWriter, status int, e rpcError) {
	data, err := json.Marshal(e)
	if err != nil {
		http.Error(w, e.Message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// headerHook runs fn once: when the response's header is written, else
// at done.
type headerHook struct {
	http.ResponseWriter
	fn   func()
	once sync.Once
}

func (h *headerHook) WriteHeader(code int) {
	h.once.Do(h.fn)
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerHook) Write(b []byte) (int, error) {
	h.once.Do(h.fn)
	return h.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (h *headerHook) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *headerHook) done() { h.once.Do(h.fn) }
