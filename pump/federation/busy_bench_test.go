package federation

import (
	"crypto/ed25519"
	"crypto/tls"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// processCPU is the CPU time the process used so far (user and system).
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCallRefusedBusy: what a peer's call for a listener the pump
// refuses as busy costs the callee (a durable one: store and journal), one
// call at a time on one link: the round trip to its nack and the CPU time
// of the whole process (the peer's signing and the link included, the same
// in every variant) per refused call.
func BenchmarkCallRefusedBusy(b *testing.B) {
	aKey := newKey(b)
	clock := &busyClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	hold := make(chan struct{})
	c := newCalleePumped(b, aKey, newKey(b), b.TempDir(), hold, &store.Options{}, nil, func(o *pump.Options) {
		o.Clock, o.MaxQueueWait, o.MaxConcurrentHandlers = clock.Now, 5*time.Second, 1
	})
	b.Cleanup(func() { close(hold) })
	ws := dialFor(b, c, aKey)
	n := 0
	echo := func() []byte {
		n++
		return callFor(b, aKey, fmt.Sprint("m", n))
	}
	for range 2 { // one running, one queued
		if ack := sendFor(b, ws, echo()); ack.Type != frameAck {
			b.Fatalf("call: %+v, want an ack", ack)
		}
	}
	clock.advance(10 * time.Second) // past max_queue_wait
	calls := make([][]byte, 0, b.N+1)
	for range b.N + 1 {
		calls = append(calls, echo())
	}
	if f := sendFor(b, ws, calls[0]); f.Type != frameNack {
		b.Fatalf("call at the stalled listener: %+v, want a nack", f)
	}
	cpu := processCPU(b)
	b.ResetTimer()
	for _, call := range calls[1:] {
		if f := sendFor(b, ws, call); f.Type != frameNack {
			b.Fatalf("call: %+v, want a nack", f)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/refused")
}

// dialFor is dialRaw for a benchmark: the link's socket after the
// handshake as gateway "a".
func dialFor(b *testing.B, c *callee, key ed25519.PrivateKey) *websocket.Conn {
	b.Helper()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // test
	ws, _, err := d.Dial(c.url()+Path, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	s := ws.NetConn().(*tls.Conn).ConnectionState()
	if _, err := dialHandshake(ws, key, "a", c.key.Public().(ed25519.PublicKey), &s, time.Now); err != nil {
		b.Fatal(err)
	}
	return ws
}

// callFor is rawPeer.call for a benchmark: a signed call to echo.
func callFor(b *testing.B, key ed25519.PrivateKey, text string) []byte {
	b.Helper()
	lt := stage.NewThreadID()
	e := &envelope{From: "a", To: "echo", Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: time.Now()},
		Payload: []byte(`<Echo xmlns=""><Text>` + text + `</Text></Echo>`)}
	env, err := envsig.Sign(key, e.build())
	if err != nil {
		b.Fatal(err)
	}
	return env
}

// sendFor is rawPeer.send for a benchmark: it writes env and returns the
// frame answering it.
func sendFor(b *testing.B, ws *websocket.Conn, env []byte) frame {
	b.Helper()
	if err := ws.WriteMessage(websocket.BinaryMessage, env); err != nil {
		b.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		mt, m, err := ws.ReadMessage()
		if err != nil {
			b.Fatalf("no answer: %v", err)
		}
		if mt != websocket.TextMessage {
			continue
		}
		var f frame
		if err := jsonUnmarshal(m, &f); err != nil {
			b.Fatal(err)
		}
		return f
	}
}
