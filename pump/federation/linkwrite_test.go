package federation

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
)

// gatedConn counts the writes made to it once armed, and holds the first
// of them until released: what is queued meanwhile must leave in one
// write after it.
type gatedConn struct {
	net.Conn
	armed   atomic.Bool
	writes  atomic.Int64
	entered chan struct{} // closed when the first armed write begins
	release chan struct{} // closed to let it go on
	once    sync.Once
}

func newGatedConn(c net.Conn) *gatedConn {
	return &gatedConn{Conn: c, entered: make(chan struct{}), release: make(chan struct{})}
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if c.armed.Load() {
		if c.writes.Add(1) == 1 {
			c.once.Do(func() { close(c.entered) })
			<-c.release
		}
	}
	return c.Conn.Write(b)
}

// gatedListener wraps every connection it accepts in a gatedConn.
type gatedListener struct {
	net.Listener
	conns chan *gatedConn
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := newGatedConn(c)
	l.conns <- g
	return g, nil
}

// received is one message a link's peer read.
type received struct {
	Type int
	Data string
}

// wsPair is a websocket link over plain TCP on loopback: the writing side
// (dialed or accepted, as asked) through a gatedConn, and the reading side,
// whose messages arrive on got.
type wsPair struct {
	writer *websocket.Conn
	gate   *gatedConn
	got    chan received
	pings  chan string
	pongs  chan string
}

func newWSPair(t testing.TB, writerDialed, overTLS bool) *wsPair {
	t.Helper()
	p := &wsPair{got: make(chan received, 1024), pings: make(chan string, 16), pongs: make(chan string, 16)}
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		accepted <- ws
	}))
	gl := &gatedListener{Listener: srv.Listener, conns: make(chan *gatedConn, 1)}
	srv.Listener = gl
	if overTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	var dialedGate *gatedConn
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dialedGate = newGatedConn(c)
		return dialedGate, nil
	}}
	client, _, err := d.Dial(strings.Replace(srv.URL, "http", "ws", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	serverGate := <-gl.conns
	reader := server
	p.writer, p.gate = client, dialedGate
	if !writerDialed {
		reader = client
		p.writer, p.gate = server, serverGate
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	reader.SetPingHandler(func(data string) error { p.pings <- data; return nil })
	reader.SetPongHandler(func(data string) error { p.pongs <- data; return nil })
	go func() {
		for {
			mt, b, err := reader.ReadMessage()
			if err != nil {
				close(p.got)
				return
			}
			p.got <- received{Type: mt, Data: string(b)}
		}
	}()
	return p
}

// next is the next message the reading side read.
func (p *wsPair) next(t *testing.T) received {
	t.Helper()
	select {
	case r, ok := <-p.got:
		if !ok {
			t.Fatal("the link ended")
		}
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("no message within 60s")
	}
	return received{}
}

// startWriter serves the writing side of c's link.
func startWriter(c *conn) { go c.writeLoop() }

// TestLinkBatchesFrames: what is queued for a link while it writes —
// acknowledgements, and the envelopes of a sender's batch — leaves in one
// write after it (one TLS record and system call for a batch, rather than
// one per frame), and the peer reads each frame as it was queued, from
// whichever side of the link (a dialer's frames are masked).
func TestLinkBatchesFrames(t *testing.T) {
	big := bytes.Repeat([]byte("<x>0123456789</x>"), 20000) // 340,000 bytes: past writeChunk, 64-bit length
	mid := bytes.Repeat([]byte("y"), 300)                   // a 16-bit length
	for _, tc := range []struct {
		name   string
		dialed bool
		envs   [][]byte
		// writes is how many writes carry what was queued behind the
		// first (held) one.
		writes int64
	}{
		{"dialed, acks only", true, nil, 1},
		{"accepted, acks only", false, nil, 1},
		{"dialed, acks and envelopes", true, [][]byte{[]byte("<a/>"), mid, []byte("<b/>")}, 1},
		{"accepted, acks and envelopes", false, [][]byte{[]byte("<a/>"), mid, []byte("<b/>")}, 1},
		{"dialed, a batch past writeChunk", true, [][]byte{big, mid}, 2},
		{"accepted, a batch past writeChunk", false, [][]byte{big, mid}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newWSPair(t, tc.dialed, false)
			c := newConn(nil, p.writer, peer{}, false, tc.dialed)
			defer c.close(closingStop)
			startWriter(c)
			p.gate.armed.Store(true)
			// The first acknowledgement's write is held…
			c.acks.owe("first")
			c.acks.send(frame{Type: frameAck, ID: "first"})
			select {
			case <-p.gate.entered:
			case <-time.After(60 * time.Second):
				t.Fatal("the first acknowledgement was not written")
			}
			// …while more are queued, and a sender's batch.
			var want []received
			want = append(want, received{websocket.TextMessage, `{"type":"ack","id":"first"}`})
			for i := range 20 {
				id := fmt.Sprintf("ack-%d", i)
				c.acks.owe(id)
				c.acks.send(frame{Type: frameAck, ID: id})
				want = append(want, received{websocket.TextMessage, `{"type":"ack","id":"` + id + `"}`})
			}
			wrote := make(chan error, 1)
			if len(tc.envs) > 0 {
				go func() { wrote <- c.writeAll(opBinary, tc.envs...) }()
				for _, e := range tc.envs {
					want = append(want, received{websocket.BinaryMessage, string(e)})
				}
				waitUntil(t, "the envelopes were not queued", func() bool {
					c.out.mu.Lock()
					defer c.out.mu.Unlock()
					return len(c.out.frames) == len(tc.envs)
				})
			} else {
				wrote <- nil
			}
			close(p.gate.release)
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			var got []received
			for range want {
				got = append(got, p.next(t))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("frames read (-want +got):\n%s", diff)
			}
			expired := make(chan struct{})
			defer time.AfterFunc(60*time.Second, func() { close(expired) }).Stop()
			if !c.acks.drain(expired) {
				t.Fatal("acknowledgements left owed once written")
			}
			if n := p.gate.writes.Load() - 1; n != tc.writes {
				t.Fatalf("%d writes after the first, want %d", n, tc.writes)
			}
		})
	}
}

// TestLinkPings: a ping carries the bytes written before it (the pong
// tells the peer read them: readUpTo), from either side; a pong is queued
// without waiting and carries the ping's data.
func TestLinkPings(t *testing.T) {
	for _, dialed := range []bool{true, false} {
		t.Run(fmt.Sprint("dialed=", dialed), func(t *testing.T) {
			p := newWSPair(t, dialed, false)
			c := newConn(nil, p.writer, peer{}, false, dialed)
			defer c.close(closingStop)
			startWriter(c)
			if err := c.write([]byte("12345")); err != nil {
				t.Fatal(err)
			}
			if err := c.ping(time.Now().Add(60 * time.Second)); err != nil {
				t.Fatal(err)
			}
			c.pong([]byte("pong-data"))
			if err := c.write([]byte("after")); err != nil {
				t.Fatal(err)
			}
			if r := p.next(t); r.Data != "12345" {
				t.Fatalf("first message %+v", r)
			}
			if r := p.next(t); r.Data != "after" {
				t.Fatalf("second message %+v", r)
			}
			var control []string
			for _, ch := range []chan string{p.pings, p.pongs} {
				select {
				case d := <-ch:
					control = append(control, d)
				case <-time.After(60 * time.Second):
					t.Fatal("no ping or pong")
				}
			}
			if diff := cmp.Diff([]string{"5", "pong-data"}, control); diff != "" {
				t.Fatalf("ping and pong read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLinkWriteFails: a write the connection refuses fails the frames of
// its batch, closes the link, and every later write fails at once: no
// writer waits on a link whose writer is gone.
func TestLinkWriteFails(t *testing.T) {
	p := newWSPair(t, true, false)
	c := newConn(nil, p.writer, peer{}, false, true)
	defer c.close(closingStop)
	startWriter(c)
	_ = p.gate.Conn.Close() // beneath gorilla and the writer
	done := make(chan error, 2)
	go func() { done <- c.write([]byte("lost")) }()
	go func() { done <- c.ping(time.Now().Add(60 * time.Second)) }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a write on a closed connection succeeded")
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a write on a closed connection still waits after 60s")
		}
	}
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the link was not closed")
	}
	if err := c.write([]byte("after")); !errors.Is(err, errLinkClosed) {
		t.Fatalf("a write after the link closed: %v, want errLinkClosed", err)
	}
}

// TestMaskBytes: the word-wise masking equals the byte-wise definition
// (RFC 6455 §5.3) for every length and key.
func TestMaskBytes(t *testing.T) {
	for n := range 40 {
		for _, key := range []uint32{0, 1, 0xdeadbeef, 0x01020304} {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i * 7)
			}
			want := bytes.Clone(b)
			for i := range want {
				want[i] ^= byte(key >> (8 * (i % 4)))
			}
			maskBytes(b, key)
			if !bytes.Equal(b, want) {
				t.Fatalf("n=%d key=%x: %x, want %x", n, key, b, want)
			}
		}
	}
}

// BenchmarkLinkFrames is a busy link's writing: per op an envelope of the
// bench's size, written as the outbox's sender does, and an
// acknowledgement of the peer's, queued as delivery does, from as many
// goroutines as GOMAXPROCS, over TLS on loopback to a reader that drains
// them. It reports the process's CPU per op (cpu-ns/op) and the writes
// made to the connection beneath TLS per op.
func BenchmarkLinkFrames(b *testing.B) {
	p := newWSPair(b, true, true)
	go func() {
		for range p.got {
		}
	}()
	c := newConn(nil, p.writer, peer{}, false, true)
	defer c.close(closingStop)
	startWriter(c)
	env := bytes.Repeat([]byte("e"), 2400)
	p.gate.armed.Store(true)
	close(p.gate.release)
	var ids atomic.Int64
	cpu0 := processCPU(b)
	w0 := p.gate.writes.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("ack-", ids.Add(1))
			c.acks.owe(id)
			c.acks.send(frame{Type: frameAck, ID: id})
			if err := c.write(env); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(p.gate.writes.Load()-w0)/float64(b.N), "writes/op")
}
