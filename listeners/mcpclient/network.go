package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// A mount's tools are called on the calling thread's behalf, so a call is
// held to the network allow-list of that thread's security profile
// (xmlpipe.CheckDial) before anything is sent to the server:
//
//   - a server reached over HTTP is dialled at its URL's host:port, which
//     the profile must allow;
//   - a local server (a command on stdio) dials whatever it dials itself;
//     Options.Network declares those addresses, and the profile must allow
//     every one of them. A local server that declares nothing may dial any
//     address: only a thread whose profile does not restrict the network
//     (or allows "*:*") reaches it.
//
// Declared addresses hold for an HTTP server too (what it dials on the
// caller's behalf). A thread without a profile reaches every mount.

// anyAddress is the address an undeclared local server may dial: every one.
const anyAddress = "*:*"

// serverAddress is the host:port a URL is dialled at (the scheme's port
// when it names none).
func serverAddress(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("%w: server URL %q has no host", ErrServer, raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// checkNetwork returns nil when the profile in ctx may reach the mount's
// server (see above), else a refusal wrapping xmlpipe.ErrNetworkDenied.
func (m *Mount) checkNetwork(ctx context.Context) error {
	if m.o.URL != "" {
		addr, err := serverAddress(m.o.URL)
		if err != nil {
			return err
		}
		if err := xmlpipe.CheckDial(ctx, addr); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
	}
	if m.o.Network == nil {
		if len(m.o.Command) == 0 {
			return nil
		}
		if err := xmlpipe.CheckDial(ctx, anyAddress); err != nil {
			return fmt.Errorf("mcp: %w: %s is a local server that declares no network: it may dial any address", err, m.o.Name)
		}
		return nil
	}
	for _, a := range m.o.Network {
		if err := xmlpipe.CheckDial(ctx, a); err != nil {
			return fmt.Errorf("mcp: %w: %s declares it dials it", err, m.o.Name)
		}
	}
	return nil
}

// ErrRedirect: a server reached by url: answered with a redirect, which a
// mount does not follow.
var ErrRedirect = errors.New("mcp: the server redirected")

// httpClient is the client a mount reaches a url: server with. It follows
// no redirect: only the URL's host:port is held to the calling thread's
// profile (checkNetwork), so a server must not send the call on to an
// address of its choosing.
var httpClient = &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("%w to %s: redirects are not followed", ErrRedirect, req.URL.Redacted())
}}
