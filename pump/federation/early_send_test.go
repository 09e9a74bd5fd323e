package federation

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAnswerLeavesBeforeItsCommit: an answer is written to the link while
// its outbox entry commits, not after; an acknowledgement that arrives
// before that commit still removes the entry (its DELETE follows the
// INSERT), so nothing is left to send again.
func TestAnswerLeavesBeforeItsCommit(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeIn(t, aKey, newKey(t), t.TempDir(), hold)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>early</Text></Echo>`)
	sent, err := parse(call)
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r.send(call); ack.Type != frameAck || ack.ID != sent.Link.ID {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(c.seen()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the echo never saw the call")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Hold the state's committer inside a transaction: nothing commits
	// until gate closes.
	entered, gate := make(chan struct{}), make(chan struct{})
	c.m.db.w.submit(&write{apply: func(*stmts) error {
		close(entered)
		<-gate
		return nil
	}})
	<-entered
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	defer release()
	close(hold) // the echo answers

	reply, err := parse(r.next())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Link.Kind != KindReply || reply.Link.Ref != sent.Link.ID {
		t.Fatalf("got %s for %s, want the reply to %s", reply.Link.Kind, reply.Link.Ref, sent.Link.ID)
	}
	// Acknowledge it while its entry is still uncommitted.
	if err := r.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: reply.Link.ID}.marshal()); err != nil {
		t.Fatal(err)
	}
	for c.m.Status()[0].Queued != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the acknowledged reply stayed in the outbox")
		}
		time.Sleep(5 * time.Millisecond)
	}
	release()
	for {
		var n int
		if err := c.m.db.sql.QueryRow(`SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d outbox rows left after the acknowledgement committed", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
