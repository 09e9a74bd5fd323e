package bus

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// Hostile /ws clients on loopback: each gets a clear answer or a close
// with a reason, the server's memory stays bounded, and a well-behaved
// client beside it keeps getting its answers.

// pingPong sends a ping on c and waits for its pong.
func pingPong(t *testing.T, c *websocket.Conn, id string) {
	t.Helper()
	writeFrame(t, c, frame{"type": "ping", "id": id})
	for {
		got := readFrame(t, c)
		if got["type"] == "pong" && got["id"] == id {
			return
		}
	}
}

// TestHostileHugeFrame: a client sending one 64 MiB frame is closed with
// 1009 once the server has read past the limit — the server never holds
// the frame — while another client's pings are answered meanwhile.
func TestHostileHugeFrame(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("hugo", auth.Operator)
	good := f.dial("/ws", token)
	readFrame(t, good) // connected
	bad := f.dial("/ws", token)
	readFrame(t, bad) // connected

	huge := bytes.Repeat([]byte("x"), 64<<20)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	wrote := make(chan error, 1)
	go func() { wrote <- bad.WriteMessage(websocket.TextMessage, huge) }()
	pingPong(t, good, "during")
	ce := closeError(t, bad)
	if ce.Code != websocket.CloseMessageTooBig || !strings.HasPrefix(ce.Text, ReasonTooBig) {
		t.Errorf("closed with %d %q, want 1009 %q", ce.Code, ce.Text, ReasonTooBig)
	}
	select {
	case err := <-wrote:
		t.Logf("the 64 MiB write ended: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the 64 MiB write never ended: the server neither read nor closed")
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// The server reads at most MaxFrameBytes+1 of it (1 MiB); everything
	// this process allocated meanwhile (client and server) stays far
	// below the frame.
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > 24<<20 {
		t.Errorf("%d MiB allocated while a 64 MiB frame was refused: the server buffered it", grew>>20)
	}
	t.Logf("%.1f MiB allocated while the 64 MiB frame was refused", float64(grew)/(1<<20))
	pingPong(t, good, "after")
}

// TestHostileSlowReader: a client that sends requests and never reads its
// answers fills its TCP window; the server drops it (too slow, or its write
// timed out) instead of queueing without bound, while another client's
// pings are answered.
func TestHostileSlowReader(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.SendQueue = 16; o.WriteTimeout = time.Second })
	token := f.loginAs("sid", auth.Operator)
	good := f.dial("/ws", token)
	readFrame(t, good) // connected

	// A raw connection whose reads never happen: its receive window fills.
	slow := f.dial("/ws", token)
	var done sync.WaitGroup
	done.Add(1)
	stopped := make(chan error, 1)
	go func() {
		defer done.Done()
		req := []byte(`{"type":"listeners"}`)
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			_ = slow.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if err := slow.WriteMessage(websocket.TextMessage, req); err != nil {
				stopped <- err
				return
			}
		}
		stopped <- errors.New("the server still took requests after a minute of unread answers")
	}()
	pingPong(t, good, "while-slow")
	err := <-stopped
	done.Wait()
	if err != nil && strings.Contains(err.Error(), "still took requests") {
		t.Fatal(err)
	}
	t.Logf("the slow reader's writes ended: %v", err)
	if _, ok := f.logs.find("client too slow: send queue full, disconnecting", "queue", int64(16)); !ok {
		t.Log("dropped by a write timeout rather than a full queue")
	}
	pingPong(t, good, "after-slow")
}

// TestHostileUnauthenticatedSockets: a thousand upgrades without a token
// are each refused with 401 and leave nothing behind; a logged-in client
// is served throughout.
func TestHostileUnauthenticatedSockets(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("una", auth.Operator)
	good := f.dial("/ws", token)
	readFrame(t, good) // connected
	before := runtime.NumGoroutine()

	const n, parallel = 1000, 50
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, resp, err := f.tryDial("/ws", nil, false)
			if err == nil {
				c.Close()
				statuses <- http.StatusSwitchingProtocols
				return
			}
			if resp == nil {
				statuses <- 0
				return
			}
			statuses <- resp.StatusCode
		}()
	}
	pingPong(t, good, "during")
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[http.StatusUnauthorized] != n {
		t.Errorf("statuses %v, want %d × 401", counts, n)
	}
	pingPong(t, good, "after")
	settleGoroutines(t, before)
}

// TestHostileHalfRequests: connections that send half a TLS hello or half
// an HTTP request and hold it do not stop others being served, and the
// server closes them on its own (ReadHeaderTimeout).
func TestHostileHalfRequests(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("hal", auth.Operator)
	addr := strings.TrimPrefix(f.base, "https://")
	before := runtime.NumGoroutine()

	var held []net.Conn
	for i := range 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if i%2 == 0 {
			_, _ = c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00}) // a TLS record header, then nothing
			continue
		}
		tc := tls.Client(c, f.tls.Clone())
		_ = tc.SetDeadline(time.Now().Add(time.Minute))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		_, _ = tc.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgr")) // half a request
		held[i] = tc
	}
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	good := f.dial("/ws", token)
	readFrame(t, good) // connected
	pingPong(t, good, "while-held")

	// The server gives up on each: a read sees the connection closed.
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("held connection %d still open after a minute", i)
				}
				break
			}
		}
	}
	good.Close()
	settleGoroutines(t, before)
}

// settleGoroutines waits (up to a minute) for the goroutine count to come
// back to at most before (+ a few the runtime and the organism start and
// stop on their own).
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n := runtime.NumGoroutine()
		if n <= before+5 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHostileSilentBusSockets: a thousand /bus sockets upgraded without a
// token that never send their first frame are each closed once AuthTimeout
// passes (1008), leave nothing behind, and a logged-in client is served
// meanwhile.
func TestHostileSilentBusSockets(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AuthTimeout = 2 * time.Second })
	token := f.loginAs("sil", auth.Operator)
	good := f.dial("/ws", token)
	readFrame(t, good) // connected
	before := runtime.NumGoroutine()

	const n = 1000
	socks := make([]*websocket.Conn, 0, n)
	for i := range n {
		c, resp, err := f.tryDial("/bus", nil, false)
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("socket %d: %v (status %d)", i, err, status)
		}
		socks = append(socks, c)
	}
	t.Cleanup(func() {
		for _, c := range socks {
			c.Close()
		}
	})
	pingPong(t, good, "while-held")
	codes := map[int]int{}
	for _, c := range socks {
		codes[closeError(t, c).Code]++
	}
	if codes[websocket.ClosePolicyViolation] != n {
		t.Errorf("close codes %v, want %d × 1008", codes, n)
	}
	pingPong(t, good, "after")
	settleGoroutines(t, before)
}

// TestHostileSendFlood: one client fires a thousand conversations as
// fast as it can while reading its frames; each is answered (sent, or an
// error frame saying why not), another client's pings are answered
// meanwhile, and once the flood's conversations complete nothing is left
// running.
func TestHostileSendFlood(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.SendQueue = 1 << 16 })
	token := f.loginAs("flo", auth.Operator)
	good := f.dial("/ws", token)
	readFrame(t, good) // connected
	flood := f.dial("/ws", token)
	readFrame(t, flood) // connected
	before := runtime.NumGoroutine()

	const n = 1000
	go func() {
		for i := range n {
			if err := flood.WriteJSON(frame{"type": "send", "raw": "@greeter Flood", "id": float64(i)}); err != nil {
				return
			}
		}
	}()
	pingPong(t, good, "during")
	answered, completed, errs := 0, 0, map[string]int{}
	_ = flood.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for answered < n || completed < answered-errsTotal(errs) {
		_, data, err := flood.ReadMessage()
		if err != nil {
			t.Fatalf("after %d answers and %d completions: %v", answered, completed, err)
		}
		var fr frame
		if err := json.Unmarshal(data, &fr); err != nil {
			t.Fatal(err)
		}
		switch fr["type"] {
		case "sent":
			answered++
		case "error":
			if _, isAnswer := fr["id"]; isAnswer {
				answered++
				errs[fmt.Sprint(fr["code"], ": ", fr["error"])]++
			}
		case "complete":
			completed++
		}
	}
	t.Logf("%d sends: %d completed, errors %v", n, completed, errs)
	pingPong(t, good, "after")
	flood.Close()
	settleGoroutines(t, before)
}

func errsTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
