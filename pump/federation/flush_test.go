package federation

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsPair returns the two ends of a real websocket over loopback.
func wsPair(t *testing.T) (server, client *websocket.Conn) {
	t.Helper()
	got := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		got <- ws
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	select {
	case server = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no websocket")
	}
	t.Cleanup(func() { _ = server.Close() })
	return server, client
}

// TestFlushWritesEnvelopesBeforeAcks: one flush writes the outbox entries
// not yet written on the link, in their order, then the acknowledgements
// queued meanwhile; a second flush writes nothing again; a link that is no
// longer the gateway's writes its acknowledgements but no entry.
func TestFlushWritesEnvelopesBeforeAcks(t *testing.T) {
	server, client := wsPair(t)
	g := &gateway{byID: map[string]*entry{}, gen: 1}
	c := &conn{g: g, ws: server, done: make(chan struct{})}
	c.acks = &acker{c: c, kick: make(chan struct{}, 1)} // no goroutine: flush is called here
	g.conn = c
	for i, id := range []string{"e1", "e2", "e3"} {
		en := &entry{seq: int64(i + 1), id: id, env: []byte("<" + id + "/>")}
		if id == "e2" {
			en.sentOn = 1 // written on this link already
		}
		g.insert(en)
	}
	c.acks.send(frame{Type: frameAck, ID: "a1"})
	c.acks.send(frame{Type: frameAck, ID: "a2"})
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.flush(); err != nil { // nothing left: writes nothing
		t.Fatal(err)
	}
	old := &conn{g: g, ws: server, done: make(chan struct{})}
	old.acks = &acker{c: old, kick: make(chan struct{}, 1)}
	g.insert(&entry{seq: 4, id: "e4", env: []byte("<e4/>")})
	old.acks.send(frame{Type: frameAck, ID: "a3"})
	if err := old.flush(); err != nil {
		t.Fatal(err)
	}
	want := []string{"binary <e1/>", "binary <e3/>", "text a1", "text a2", "text a3"}
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	for i, w := range want {
		mt, b, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		got := "binary " + string(b)
		if mt == websocket.TextMessage {
			var f frame
			if err := jsonUnmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			got = "text " + f.ID
		}
		if got != w {
			t.Fatalf("frame %d is %q, want %q (in order %v)", i, got, w, want)
		}
	}
	if e := g.byID["e4"]; e.sentOn != 0 {
		t.Fatalf("an entry was claimed by a link that is not the gateway's (sentOn %d)", e.sentOn)
	}
}
