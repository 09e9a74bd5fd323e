package federation

import (
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestGracefulStopAwaitsThePeersAcknowledgements: an answer written on
// the link whose acknowledgement is still on its way when a graceful stop
// begins is waited for: the link stays open for it (within the drain's
// bound), the acknowledgement clears the outbox, and the next start has
// nothing to send again — the peer sees no copy to drop.
func TestGracefulStopAwaitsThePeersAcknowledgements(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	c := newCalleeIn(t, aKey, bKey, dir, nil)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>last</Text></Echo>`)
	sent := mustParse(t, call)
	ack, answers := r.send(call)
	if ack.Type != frameAck || ack.ID != sent.Link.ID {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	if len(answers) == 0 {
		answers = append(answers, r.next())
	}
	reply := mustParse(t, answers[0])
	if reply.Link.Kind != KindReply || reply.Link.Ref != sent.Link.ID {
		t.Fatalf("got %s for %s, want the reply to %s", reply.Link.Kind, reply.Link.Ref, sent.Link.ID)
	}

	// The reply is unacknowledged when the stop begins; its
	// acknowledgement comes once the link drains for the stop.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.m.Stop()
	}()
	g := c.m.gateways[0]
	g.mu.Lock()
	link := g.conn
	g.mu.Unlock()
	waitUntil(t, "the stop never drained the link", func() bool {
		link.acks.mu.Lock()
		defer link.acks.mu.Unlock()
		return link.acks.draining
	})
	if err := r.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: reply.Link.ID}.marshal()); err != nil {
		t.Fatal(err)
	}
	_ = r.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, _, err := r.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("the link did not close after the stop: %v", err)
			}
			break
		}
	}
	<-stopped
	if q := g.queued(); q != 0 {
		t.Errorf("after the graceful stop %d envelope(s) wait for the peer, want 0", q)
	}
	stopCallee(t, c)

	c2 := newCalleeIn(t, aKey, bKey, dir, nil)
	defer stopCallee(t, c2)
	if q := c2.m.gateways[0].queued(); q != 0 {
		t.Errorf("the next start sends %d acknowledged envelope(s) again, want 0", q)
	}
}
