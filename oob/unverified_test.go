package oob

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// dialRaw opens a WebSocket to the fixture's Unix socket that sends
// nothing.
func dialRaw(ctx context.Context, t *testing.T, f *fixture) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "unix", f.srv.opts.Config.UnixSocket)
	}}
	ws, _, err := d.DialContext(ctx, "ws://oob/", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// closedWithin reads ws until the server closes it and says how long that
// took (failing the test after d).
func closedWithin(t *testing.T, ws *websocket.Conn, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = ws.SetReadDeadline(start.Add(d))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("a connection that never sent a signed request is still open after %s", d)
			}
			return time.Since(start)
		}
	}
}

// A local client that connects and sends nothing holds its connection
// for AuthTimeout (DefaultAuthTimeout: seconds), not frameTimeout.
func TestSilentConnectionClosedSoon(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	ws := dialRaw(t.Context(), t, f)
	if took := closedWithin(t, ws, time.Minute); took > DefaultAuthTimeout+10*time.Second {
		t.Errorf("a silent connection was closed after %s, want about %s", took.Round(time.Second), DefaultAuthTimeout)
	}
}

// Connections that have not sent a signed request are capped at
// MaxUnverified: the oldest give way to new ones, so many idle
// connections hold a bounded number of slots, and the owner's ctl,
// connecting after them, gets through.
func TestIdleConnectionsLeaveRoomForTheOwner(t *testing.T) {
	const limit, extra = 8, 12
	f := newFixture(t, func(o *Options) { o.AuthTimeout, o.MaxUnverified = 10*time.Minute, limit })
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var closed atomic.Int32
	for range limit + extra {
		ws := dialRaw(ctx, t, f)
		go func() {
			_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						closed.Add(1)
					}
					return
				}
			}
		}()
	}
	c, err := Dial(ctx, "unix:"+f.srv.opts.Config.UnixSocket, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.clock = f.clock
	if r, raw, err := c.Do(ctx, []byte(`<list-listeners/>`)); err != nil || r.Payload.Listeners == nil {
		t.Fatalf("the owner beside %d idle connections: %v %s", limit+extra, err, raw)
	}
	for deadline := time.Now().Add(time.Minute); closed.Load() < extra; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d idle connections closed, want the %d beyond the cap of %d", closed.Load(), limit+extra, extra, limit)
		}
	}
	if n := f.srv.unverifiedConns(); n > limit {
		t.Errorf("%d unverified connections held, cap %d", n, limit)
	}
	if !f.securityLogged("unauthenticated OOB connection closed") {
		t.Error("no security event for the connections closed")
	}
}

// On the TCP port, a client that connects and sends nothing, or sends an
// HTTP request that is no upgrade and keeps the connection, does not hold
// it: the first is closed AuthTimeout after its accept, the second once
// answered.
func TestIdleTCPConnectionsClosed(t *testing.T) {
	port := freePort(t)
	f := newFixture(t, func(o *Options) { o.Config.Port, o.Config.UnixSocket, o.Config.Bind = port, "", "127.0.0.1" })
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	ep := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	closedIn := func(nc net.Conn) time.Duration {
		t.Helper()
		start := time.Now()
		_ = nc.SetReadDeadline(start.Add(time.Minute))
		buf := make([]byte, 4096)
		for {
			if _, err := nc.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("the connection is still open after a minute")
				}
				return time.Since(start)
			}
		}
	}
	silent, err := net.Dial("tcp", ep)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	plain, err := net.Dial("tcp", ep)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Write([]byte("GET / HTTP/1.1\r\nHost: " + ep + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	closedIn(plain)
	if took := closedIn(silent); took > DefaultAuthTimeout+3*time.Second {
		t.Errorf("a silent TCP connection was closed after %s, want about %s", took.Round(time.Second), DefaultAuthTimeout)
	}
}
