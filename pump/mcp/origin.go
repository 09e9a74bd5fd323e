package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
)

// requestHeader is the header HTTPHandler sets on every POST it passes on:
// a fresh name for that HTTP request, so the calls it carries can be
// stopped when it ends. A value the client sent is replaced.
const requestHeader = "X-Xmlpipe-Mcp-Request"

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// Errors a call's answer names when its HTTP client went away.
var (
	// ErrDisconnected: the HTTP request that carried the call ended (the
	// client disconnected) before its answer; the answer could not be
	// delivered any more.
	ErrDisconnected = errors.New("the client disconnected before the answer")
	// ErrSessionClosed: the client closed its session (DELETE) while the
	// call was running.
	ErrSessionClosed = errors.New("the client closed its session before the answer")
)

// origin names where a call came from over HTTP: the POST that carried it
// and the session it belongs to ("" for the stdio transport).
type origin struct {
	request, session string
}

type originKey struct{}

// withOrigin records in ctx the HTTP request and session a call came with
// (header is the SDK's copy of the POST's header; nil for stdio).
func withOrigin(ctx context.Context, header http.Header) context.Context {
	if header == nil {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, origin{request: header.Get(requestHeader), session: header.Get(sessionHeader)})
}

func originOf(ctx context.Context) origin {
	o, _ := ctx.Value(originKey{}).(origin)
	return o
}

// cancelOrigin cancels the running calls whose origin matches (a non-empty
// field of) o with cause.
func (b *Bridge) cancelOrigin(o origin, cause error) {
	if o.request == "" && o.session == "" {
		return
	}
	b.mu.Lock()
	var calls []*callCancel
	for c := range b.calls {
		if o.request != "" && c.origin.request == o.request || o.session != "" && c.origin.session == o.session {
			calls = append(calls, c)
		}
	}
	b.mu.Unlock()
	for _, c := range calls {
		c.cancel(cause)
	}
}

// tagRequest names one POST for the calls it carries; when the request
// ends, the returned function stops those still running — without an
// event store the transport cannot deliver their answers any more.
func (b *Bridge) tagRequest(r *http.Request) (done func()) {
	name := rand.Text()
	r.Header = r.Header.Clone()
	r.Header.Set(requestHeader, name)
	return func() { b.cancelOrigin(origin{request: name}, ErrDisconnected) }
}
