package oob

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestHostileOOBClients: on the loopback port, a client sending garbage is
// answered with an error; one that upgrades, begins a frame and holds it
// half sent is closed by the server once the frame is overdue; one that
// never sends a signed request (silent, or only garbage) is closed
// AuthTimeout after it connected; meanwhile the owner's requests are answered,
// and the owner's connection, idle as long, is kept.
func TestHostileOOBClients(t *testing.T) {
	port := freePort(t)
	f := newFixture(t, func(o *Options) { o.Config.Port, o.Config.UnixSocket, o.Config.Bind = port, "", "127.0.0.1" })
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	ep := "127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Garbage: answered with a malformed-request error, connection kept.
	garbage, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+ep+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	for _, junk := range [][]byte{[]byte("\x00\xff garbage"), []byte("<privileged-msg"), []byte(strings.Repeat("<a>", 10000))} {
		if err := garbage.WriteMessage(websocket.BinaryMessage, junk); err != nil {
			t.Fatal(err)
		}
		_ = garbage.SetReadDeadline(time.Now().Add(time.Minute))
		_, b, err := garbage.ReadMessage()
		if err != nil {
			t.Fatalf("garbage %.20q: no answer: %v", junk, err)
		}
		if !strings.Contains(string(b), CodeMalformed) {
			t.Errorf("garbage %.20q answered %s, want %s", junk, b, CodeMalformed)
		}
	}

	// Silent: upgraded, never a request. Closed AuthTimeout after it
	// connected, without a signed request.
	silent, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+ep+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	// Half a frame: a header announcing 100 bytes, 10 of them, then nothing.
	nc, err := net.Dial("tcp", ep)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("GET / HTTP/1.1\r\nHost: " + ep + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
	resp := make([]byte, 4096)
	n, err := nc.Read(resp)
	if err != nil || !strings.HasPrefix(string(resp[:n]), "HTTP/1.1 101") {
		t.Fatalf("upgrade: %q %v", resp[:n], err)
	}
	frame := append([]byte{0x82, 0x80 | 100, 1, 2, 3, 4}, make([]byte, 10)...) // binary, masked, 100 bytes
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	held := time.Now()

	// The owner is answered meanwhile.
	c, err := Dial(ctx, ep, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.clock = f.clock
	if r, raw, err := c.Do(ctx, []byte(`<list-listeners/>`)); err != nil || r.Payload.Listeners == nil {
		t.Fatalf("list-listeners beside a held frame: %v %s", err, raw)
	}

	// The server closes the held connection.
	_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		if _, err := nc.Read(resp); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("a connection holding half a frame is still open after a minute")
			}
			break
		}
	}
	t.Logf("held half a frame for %v", time.Since(held).Round(time.Second))
	for name, ws := range map[string]*websocket.Conn{"silent": silent, "garbage": garbage} {
		_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("the %s connection, never a signed request, is still open after a minute", name)
				}
				break
			}
		}
	}
	// The owner's connection, idle as long, is kept: it was verified.
	if r, raw, err := c.Do(ctx, []byte(`<list-listeners/>`)); err != nil || r.Payload.Listeners == nil {
		t.Fatalf("list-listeners after: %v %s", err, raw)
	}
}
