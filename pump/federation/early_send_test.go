package federation

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/registry/store"
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

	// Hold the store's writer inside a transaction: nothing commits
	// until gate closes.
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := c.st.WriteNow("hold", func(*store.Tx) error {
		close(entered)
		<-gate
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
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
		if err := c.st.ReadDB().QueryRow(`SELECT count(*) FROM federation_outbox`).Scan(&n); err != nil {
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

// TestLookupsDoNotWaitForACommit: on a state in the store the receive
// path's lookups (seen, received) read the last committed state through
// the store's read pool while a group commit holds the writer, and see
// what it committed once it has.
func TestLookupsDoNotWaitForACommit(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	st := openStore(t, t.TempDir(), log)
	d, err := openDB(st, log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.close(); err != nil {
			t.Error(err)
		}
	}()
	env, sent := []byte("<message>one</message>"), time.Now()
	marked := make(chan error, 1)
	d.markSeen(env, sent, sent, func(err error) { marked <- err })
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := st.WriteNow("hold", func(*store.Tx) error {
		close(entered)
		<-gate
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	looked := make(chan error, 1)
	go func() {
		dup, err := d.seen(env, sent)
		if err == nil && !dup {
			err = errors.New("a committed hash is not seen")
		}
		if err == nil {
			var state int
			if state, err = d.received("never"); err == nil && state != callNew {
				err = fmt.Errorf("received = %d for a conversation never received", state)
			}
		}
		looked <- err
	}()
	select {
	case err := <-looked:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatal("the lookups waited for the group commit")
	}
	close(gate)
}
