package oob

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestUnixSocketPermissions: the socket is created 0600 in a 0700
// directory; a directory others may enter is refused and no socket created.
func TestUnixSocketPermissions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		dirMode fs.FileMode // 0: the directory does not exist yet
		wantErr error
	}{
		{"created 0700", 0, nil},
		{"existing 0700", 0o700, nil},
		{"group may enter", 0o750, ErrSocketDir},
		{"world may enter", 0o755, ErrSocketDir},
		{"world writable", 0o777, ErrSocketDir},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(dir, strconv.Itoa(i))
			if tc.dirMode != 0 {
				if err := os.Mkdir(d, tc.dirMode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(d, tc.dirMode); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(d, "oob.sock")
			ln, err := listenUnix(path)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if _, serr := os.Lstat(path); !errors.Is(serr, fs.ErrNotExist) {
					t.Fatalf("a socket was created after the refusal: %v", serr)
				}
				return
			}
			defer ln.Close()
			st, err := os.Stat(path)
			if err != nil || st.Mode().Perm() != 0o600 || st.Mode().Type() != fs.ModeSocket {
				t.Fatalf("socket %v %v", st.Mode(), err)
			}
			dst, _ := os.Stat(d)
			if dst.Mode().Perm() != 0o700 {
				t.Fatalf("dir mode %v", dst.Mode().Perm())
			}
		})
	}
	t.Run("regular file in the way", func(t *testing.T) {
		d := filepath.Join(dir, "file")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(d, "oob.sock")
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := listenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("err %v", err)
		}
	})
}

// fakeConn is a net.Conn with a chosen remote address.
type fakeConn struct {
	net.Conn
	remote net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

// fakeListener hands out its conns in order.
type fakeListener struct {
	net.Listener
	conns []*fakeConn
}

func (l *fakeListener) Accept() (net.Conn, error) {
	if len(l.conns) == 0 {
		return nil, net.ErrClosed
	}
	c := l.conns[0]
	l.conns = l.conns[1:]
	return c, nil
}

// TestLoopbackListenerRefusesRemotePeers: a non-loopback peer is closed at
// accept and logged; the loopback one behind it is served.
func TestLoopbackListenerRefusesRemotePeers(t *testing.T) {
	f := newFixture(t, nil)
	remote := &fakeConn{remote: &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5555}}
	remote6 := &fakeConn{remote: &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5555}}
	local := &fakeConn{remote: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5556}}
	l := &loopbackListener{Listener: &fakeListener{conns: []*fakeConn{remote, remote6, local}}, log: f.srv.log}
	c, err := l.Accept()
	if err != nil || c != local {
		t.Fatalf("accepted %v, %v", c, err)
	}
	if !remote.closed || !remote6.closed || local.closed {
		t.Fatal("a remote peer was not closed, or the local one was")
	}
	if !f.securityLogged("OOB connection refused") {
		t.Fatal("no security event")
	}
}

// dialUnix connects a client to the fixture's socket.
func (f *fixture) dialUnix(t *testing.T) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, "unix:"+f.srv.opts.Config.UnixSocket, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	c.clock = f.clock
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSubscriptionPushes: over the Unix socket, a subscription pushes the
// thread-events of a conversation started by inject-message (each push
// valid against the XSD) and a system-event on config change; unsubscribe
// ends it.
func TestSubscriptionPushes(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := f.dialUnix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, raw, err := c.Do(ctx, []byte(`<subscribe-thread><include-payloads>true</include-payloads></subscribe-thread>`))
	if err != nil {
		t.Fatal(err)
	}
	validDoc(t, raw)
	sub := r.Payload.Subscription
	if sub == nil || sub.SubscriptionID == "" {
		t.Fatalf("subscribe: %+v", r.Payload)
	}
	r, _, err = c.Do(ctx, []byte(`<inject-message><to>greeter</to><payload><Greeting xmlns=""><Name>Bo</Name></Greeting></payload></inject-message>`))
	if err != nil || r.Payload.ThreadCreated == nil {
		t.Fatalf("inject: %v %+v", err, r.Payload)
	}
	conv := r.Payload.ThreadCreated.ThreadID
	var sawGreeting, sawComplete bool
	for !sawComplete {
		p, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("push: %v (greeting %v)", err, sawGreeting)
		}
		validDoc(t, raw)
		if p.Payload.SubscriptionID != sub.SubscriptionID {
			t.Fatalf("push for %q", p.Payload.SubscriptionID)
		}
		ev := p.Payload.ThreadEvent
		if ev == nil {
			continue
		}
		switch {
		case ev.EventType == "message" && ev.To == "greeter" && strings.Contains(ev.Payload, "<Name>Bo</Name>"):
			sawGreeting = true
		case ev.EventType == "complete" && ev.ThreadID == conv:
			sawComplete = true
		}
	}
	if !sawGreeting {
		t.Fatal("no message event for the greeting")
	}
	if _, _, err := c.Do(ctx, []byte(`<set-config><key>log_level</key><value>warn</value></set-config>`)); err != nil {
		t.Fatal(err)
	}
	for {
		p, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("no config-changed push: %v", err)
		}
		validDoc(t, raw)
		if se := p.Payload.SystemEvent; se != nil && se.EventType == "config-changed" {
			break
		}
	}
	r, _, err = c.Do(ctx, []byte(`<unsubscribe><subscription-id>`+sub.SubscriptionID+`</subscription-id></unsubscribe>`))
	if err != nil || r.Payload.Ack == nil {
		t.Fatalf("unsubscribe: %v %+v", err, r.Payload)
	}
	r, _, _ = c.Do(ctx, []byte(`<unsubscribe><subscription-id>`+sub.SubscriptionID+`</subscription-id></unsubscribe>`))
	if code(r) != CodeNotFound {
		t.Fatalf("second unsubscribe: %+v", r.Payload)
	}
}

// TestTCPLoopback serves the WebSocket on a loopback port; a browser
// (a request with an Origin) is refused; Shutdown closes live clients.
func TestTCPLoopback(t *testing.T) {
	port := freePort(t)
	f := newFixture(t, func(o *Options) { o.Config.Port, o.Config.UnixSocket, o.Config.Bind = port, "", "127.0.0.1" })
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	ep := "127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, ep, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.clock = f.clock
	r, raw, err := c.Do(ctx, []byte(`<list-listeners/>`))
	if err != nil || r.Payload.Listeners == nil {
		t.Fatalf("list-listeners: %v %s", err, raw)
	}
	_, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+ep+"/", http.Header{"Origin": {"http://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("browser origin: %v %v", err, resp)
	}
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Do(ctx, []byte(`<list-listeners/>`)); err == nil {
		t.Fatal("a request after Shutdown was answered")
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestStartRefusesRemoteBindWithoutTLS: the server itself refuses a
// non-loopback bind unless allow_remote_oob with TLS.
func TestStartRefusesRemoteBindWithoutTLS(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Config.Port, o.Config.UnixSocket, o.Config.Bind = freePort(t), "", "0.0.0.0" })
	if err := f.srv.Start(); err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("start: %v", err)
	}
}
