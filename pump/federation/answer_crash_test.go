package federation

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestReplyJournaledBeforeACrashIsSent: the callee dies after the reply of
// a served conversation is durable in its journal but before the answer's
// outbox entry commits. The pump's recovery neither re-delivers a reply to
// an outside party nor runs again the handler that produced it, so after
// the restart the callee sends the journaled reply again from its served
// row: the call is answered. Once that answer is kept, a further restart
// sends nothing more (the served row went with the answer's entry).
func TestReplyJournaledBeforeACrashIsSent(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	hold := make(chan struct{})
	c := newCalleeWith(t, aKey, bKey, dir, hold, &store.Options{})
	snapped := make(chan string, 1)
	c.m.beforeAnswer = func(string) {
		// The reply is durable (the event passed the pump's durability
		// gate), its answer's entry not yet queued: hold the writer so
		// that nothing else commits meanwhile, and copy the database.
		entered, gate := make(chan struct{}), make(chan struct{})
		if err := c.st.WriteNow("hold", func(*store.Tx) error {
			close(entered)
			<-gate
			return nil
		}, nil); err != nil {
			snapped <- ""
			return
		}
		<-entered
		snapped <- snapshot(t, dir)
		close(gate)
	}
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>kept</Text></Echo>`)
	sent := mustParse(t, call)
	if ack, _ := r.send(call); ack.Type != frameAck || ack.ID != sent.Link.ID {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	close(hold) // the echo answers
	var crashed string
	select {
	case crashed = <-snapped:
	case <-time.After(30 * time.Second):
		t.Fatal("the echo's reply never reached the gateway")
	}
	if crashed == "" {
		t.Fatal("could not hold the callee's writer")
	}

	// What a SIGKILL at that moment leaves: the reply journaled, no answer
	// kept.
	var outbox, served int
	if err := queryCounts(crashed, &outbox, &served); err != nil {
		t.Fatal(err)
	}
	if outbox != 0 || served != 1 {
		t.Fatalf("the crashed state holds %d outbox entries and %d served rows, want 0 and 1", outbox, served)
	}

	c2 := newCalleeWith(t, aKey, bKey, crashed, nil, &store.Options{})
	if q := c2.m.Status()[0].Queued; q != 1 {
		t.Fatalf("after the restart %d envelopes wait for the peer, want the reply", q)
	}
	r2, err := dialRaw(t, c2, aKey)
	if err != nil {
		t.Fatal(err)
	}
	reply := mustParse(t, r2.next())
	if reply.Link.Kind != KindReply || reply.Link.Ref != sent.Link.ID || !bytes.Contains(reply.Payload, []byte("KEPT")) {
		t.Fatalf("after the restart got %s for %s with %s, want the reply KEPT to %s", reply.Link.Kind, reply.Link.Ref,
			reply.Payload, sent.Link.ID)
	}
	if err := r2.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: reply.Link.ID}.marshal()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the acknowledged reply stayed in the outbox", func() bool { return c2.m.Status()[0].Queued == 0 })
	stopCallee(t, c2)

	c3 := newCalleeWith(t, aKey, bKey, crashed, nil, &store.Options{})
	if q := c3.m.Status()[0].Queued; q != 0 {
		t.Fatalf("a second restart queues %d envelopes, want none: the reply was kept and acknowledged", q)
	}
}

// queryCounts reads the outbox entries and served rows of the store in dir.
func queryCounts(dir string, outbox, served *int) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.DatabaseFileName)+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT count(*) FROM federation_outbox`).Scan(outbox); err != nil {
		return err
	}
	return db.QueryRow(`SELECT count(*) FROM federation_served`).Scan(served)
}
