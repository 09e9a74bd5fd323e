package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/mcp"
)

// earlyHTTP is `xmlpipe mcp --http`'s server, listening before the
// organism is built: until then its requests wait at an mcp.Starting.
type earlyHTTP struct {
	srv  *http.Server
	gate *mcp.Starting
	errc chan error // srv.Serve's end
}

// listenMCPHTTP opens addr and serves it at once, the requests held until
// serve (or answered with the failure, after fail).
func listenMCPHTTP(addr string, std streams) (*earlyHTTP, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	e := &earlyHTTP{gate: mcp.NewStarting(mcp.DefaultStartHold), errc: make(chan error, 1)}
	e.srv = &http.Server{Handler: e.gate, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(std.err, "xmlpipe mcp: streamable HTTP on %s\n", mcpEndpoint(ln.Addr()))
	go func() { e.errc <- e.srv.Serve(ln) }()
	return e, nil
}

// mcpEndpoint is the endpoint to give a client of this machine for addr,
// as the main bus announces its own: an address on every interface
// (0.0.0.0, ::, or --http :PORT) is named by localhost, with a note that
// other machines reach it too — without authentication, as any HTTP
// client of xmlpipe mcp.
func mcpEndpoint(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return "http://" + net.JoinHostPort("localhost", port) +
			"/ (listening on every interface: other machines can reach it, unauthenticated)"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// fail answers the requests held, and any until the server is closed,
// that the organism did not start (why goes to stderr, not to clients),
// then closes the server. A nil e (stdio) does nothing.
func (e *earlyHTTP) fail() {
	if e == nil {
		return
	}
	e.gate.Fail()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(sctx) // the held requests are answered first
}

// serve hands the requests to h until ctx ends; then endCalls ends the
// calls still running (each answered with a tool error), so that the
// requests waiting on them end and the server shuts down.
func (e *earlyHTTP) serve(ctx context.Context, h http.Handler, log *slog.Logger, endCalls func()) error {
	e.gate.Serve(h)
	select {
	case err := <-e.errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	log.Info("mcp: stopping the HTTP server")
	endCalls()
	return e.srv.Shutdown(sctx)
}
