package bus

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// discardConn is a network connection that takes every write.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) SetDeadline(time.Time) error      { return nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (discardConn) Read(p []byte) (int, error)       { return 0, io.EOF }

// hijackRecorder is a ResponseWriter whose connection is a discardConn.
type hijackRecorder struct{ *httptest.ResponseRecorder }

func (h hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := discardConn{}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// BenchmarkSocketWrite is a socket writer's work for one frame written
// alone (a /ws "sent" frame, as a closed-loop client gets it): encode,
// frame, write — the network a discarding connection.
func BenchmarkSocketWrite(b *testing.B) {
	s := &Server{opts: Options{WriteTimeout: time.Minute}, log: slog.New(slog.DiscardHandler)}
	r := httptest.NewRequest(http.MethodGet, "/ws", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	bw := &batchWriter{ResponseWriter: hijackRecorder{httptest.NewRecorder()}, writes: &s.sockets.writes}
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(bw, r, nil)
	if err != nil {
		b.Fatal(err)
	}
	w := &wsSocket{s: s}
	c := &conn{s: s, ws: ws, log: s.log, encode: w.encode, batch: bw.conn, closing: make(chan struct{})}
	w.c = c
	sent := wire.Sent{Head: wire.Head{Type: wire.TypeSent, ID: json.RawMessage("17")}, ThreadID: "2a7c1a60-9b7e-4f7e-8f5e-0c1d2e3f4a5b",
		Target: "greeter"}
	b.ReportAllocs()
	for b.Loop() {
		c.batch.begin()
		if !c.write(sent) {
			b.Fatal("write failed")
		}
		if err := c.batch.end(); err != nil {
			b.Fatal(err)
		}
	}
}
