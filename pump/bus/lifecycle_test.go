package bus

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// converse runs one in-process conversation (@greeter name) through the pump
// and waits for its completion: the pump is not stalled.
func converse(t *testing.T, p *pump.Pump, name string) {
	t.Helper()
	done := make(chan struct{}, 1)
	_, err := p.Send(context.Background(), "probe", "greeter", &hello.Greeting{Name: name},
		pump.OutletFunc(func(e pump.Event) {
			if e.Kind == pump.EventComplete {
				done <- struct{}{}
			}
		}))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("the pump did not complete a conversation: it is stalled")
	}
}

func TestSlowClientDisconnected(t *testing.T) {
	f := prepareFixture(t, func(o *Options) { o.SendQueue = 4 })
	f.beforeServe = func(s *Server) { s.writeGate = make(chan struct{}) } // no socket can drain
	f.start(f.opts)
	token := f.loginAs("sloane", auth.Operator)
	c := f.dial("/ws", token)
	for i := range 3 {
		if err := c.WriteJSON(frame{"type": "send", "raw": "@greeter Slow"}); err != nil {
			t.Logf("write %d after the server gave up: %v", i, err)
			break
		}
	}
	ce := closeError(t, c)
	if ce.Code != closeTryAgainLater || ce.Text != "Client too slow" {
		t.Errorf("closed with %d %q, want 1013 %q", ce.Code, ce.Text, "Client too slow")
	}
	if _, ok := f.logs.find("client too slow", "queue", int64(4)); !ok {
		t.Error("the disconnect was not logged")
	}
	converse(t, f.org.Pump, "Fast")
}

// waitGoroutines waits until at most n goroutines run (they exit a moment
// after the server's wait group is released) and fails with a dump if that
// does not happen.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		<-tick.C
	}
}

func TestShutdownClosesSocketsNoLeak(t *testing.T) {
	f := prepareFixture(t)
	secret := f.user("sam", auth.Admin)
	baseline := runtime.NumGoroutine()
	f.start(f.opts)
	token := f.login("sam", secret)

	ws := f.dial("/ws", token)
	readFrame(t, ws)
	writeFrame(t, ws, frame{"type": "send", "raw": "@greeter Sam"})
	sent := readFrame(t, ws)
	conversation(t, ws, sent["thread_id"].(string))
	bus := f.dial("/bus", token)
	sendRaw(t, bus, envelope("websocket:sam", stage.NewThreadID(), "Sam"))
	readEnvelope(t, bus)
	stream := f.dial("/api/v1/ws", token)
	readFrame(t, stream)
	msgs := f.dial("/api/v1/ws/messages", token)
	writeFrame(t, msgs, frame{"cmd": "subscribe", "filter": map[string][]string{}})
	readFrame(t, msgs)

	f.stop()
	for name, c := range map[string]*websocket.Conn{"ws": ws, "bus": bus, "stream": stream, "messages": msgs} {
		ce := closeError(t, c)
		if ce.Code != websocket.CloseGoingAway || ce.Text != "Server shutting down" {
			t.Errorf("%s closed with %d %q, want 1001", name, ce.Code, ce.Text)
		}
		c.Close()
	}
	if n := f.srv.router.size(); n != 0 {
		t.Errorf("%d conversations still routed", n)
	}
	waitGoroutines(t, baseline)
	if _, _, err := f.tryDial("/ws", nil, false); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("dial after shutdown: %v", err)
	}
}
