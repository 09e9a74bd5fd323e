package federation

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestAnswerGivenBeforeACrashIsSent: the callee dies once what answers a
// served conversation is durable — the reply in its journal; for a
// handler that failed (huh), a conversation that failed inside and could
// not answer (huh) or one ended without answering (end), the delivery mark of its message — but before the answer's
// outbox entry commits. The pump's recovery neither re-delivers a reply to
// an outside party nor runs again a handler whose output or delivery mark
// is durable, so after the restart the callee sends the answer again from
// its served row and its journal: the call is answered. Once that answer
// is kept and acknowledged, a further restart sends nothing more (the
// served row went with the answer's entry).
func TestAnswerGivenBeforeACrashIsSent(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		kind       Kind
		payload    string
	}{
		{"reply", "kept", KindReply, "KEPT"},
		{"huh", echoFail, KindHuh, ""},
		{"end", echoSilent, KindEnd, ""},
		// A listener the echo passed the call on to failed, and the echo,
		// hearing no errors, could not answer: a huh on the live path
		// (TestServedFailureInsideIsAHuh), so a huh after the restart too.
		{"failed inside", echoDelegateFail, KindHuh, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
			hold := make(chan struct{})
			c := newCalleeWith(t, aKey, bKey, dir, hold, &store.Options{})
			snapped := make(chan string, 1)
			c.m.beforeAnswer = func(string) { snapped <- crashState(t, c.st, dir) }
			r, err := dialRaw(t, c, aKey)
			if err != nil {
				t.Fatal(err)
			}
			call := r.call("echo", `<Echo xmlns=""><Text>`+tc.text+`</Text></Echo>`)
			sent := mustParse(t, call)
			if ack, _ := r.send(call); ack.Type != frameAck || ack.ID != sent.Link.ID {
				t.Fatalf("call acknowledged with %+v", ack)
			}
			close(hold) // the echo answers
			var crashed string
			select {
			case crashed = <-snapped:
			case <-time.After(60 * time.Second):
				t.Fatal("the echo's answer never reached the gateway")
			}
			if crashed == "" {
				t.Fatal("no crash state taken")
			}
			var outbox, served int
			if err := queryCounts(crashed, &outbox, &served); err != nil {
				t.Fatal(err)
			}
			if outbox != 0 || served != 1 {
				t.Fatalf("the crashed state holds %d outbox entries and %d served rows, want 0 and 1", outbox, served)
			}

			c2 := newCalleeWith(t, aKey, bKey, crashed, nil, &store.Options{})
			if q := c2.m.Status()[0].Queued; q != 1 {
				t.Fatalf("after the restart %d envelopes wait for the peer, want the answer", q)
			}
			r2, err := dialRaw(t, c2, aKey)
			if err != nil {
				t.Fatal(err)
			}
			a := mustParse(t, r2.next())
			if a.Link.Kind != tc.kind || a.Link.Ref != sent.Link.ID || !bytes.Contains(a.Payload, []byte(tc.payload)) {
				t.Fatalf("after the restart got %s for %s with %q, want %s %q to %s", a.Link.Kind, a.Link.Ref,
					a.Payload, tc.kind, tc.payload, sent.Link.ID)
			}
			if err := r2.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: a.Link.ID}.marshal()); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the acknowledged answer stayed in the outbox", func() bool { return c2.m.Status()[0].Queued == 0 })
			stopCallee(t, c2)

			c3 := newCalleeWith(t, aKey, bKey, crashed, nil, &store.Options{})
			if q := c3.m.Status()[0].Queued; q != 0 {
				t.Fatalf("a second restart queues %d envelopes, want none: the answer was kept and acknowledged", q)
			}
		})
	}
}

// crashState returns a copy of dir's database as a SIGKILL would leave it
// once every delivery mark queued so far is durable, and nothing after:
// it waits (30 s at most) until the journal has nothing left to
// re-deliver, then holds st's writer while it copies the files. It runs on
// the pump's event goroutine, so it reports failure as "".
func crashState(t *testing.T, st *store.Store, dir string) string {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		page, err := st.UndeliveredAfter(0, 1)
		if err != nil || time.Now().After(deadline) {
			return ""
		}
		if len(page) == 0 {
			break
		}
	}
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := st.WriteNow("hold", func(*store.Tx) error {
		close(entered)
		<-gate
		return nil
	}, nil); err != nil {
		return ""
	}
	<-entered
	defer close(gate)
	return snapshot(t, dir)
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

// TestUnansweredServedLeftToRecovery: a served row without an answer kept
// is answered at the restart only when its conversation is over. One whose
// call was never journaled (the crash came between its rows' commit and
// its journal record: the peer's resend injects it) and one with a message
// left to re-deliver (the recovery runs it) get nothing.
func TestUnansweredServedLeftToRecovery(t *testing.T) {
	for _, tc := range []struct {
		name    string
		journal bool
	}{
		{"call never journaled", false},
		{"call left to re-deliver", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
			c := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{})
			lt := stage.NewThreadID()
			conv := derivedThread(c.m.secret, "a", lt)
			if err := c.m.db.write("serve", c.m.db.serveRows(conv, "a", lt, time.Now())); err != nil {
				t.Fatal(err)
			}
			if tc.journal {
				if _, err := c.st.AppendSync(context.Background(), store.Entry{Thread: conv, Conversation: conv,
					Direction: store.Inbound, Kind: store.Message, From: "a", To: "echo", Listener: "echo",
					PayloadTag: "Echo", Bytes: []byte(`<Echo><Text>later</Text></Echo>`)}); err != nil {
					t.Fatal(err)
				}
			}
			stopCallee(t, c)
			c2 := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{})
			if q := c2.m.Status()[0].Queued; q != 0 {
				t.Fatalf("the restart queued %d envelopes for a conversation that is not over", q)
			}
		})
	}
}

// TestCallWithLiveThreadButNoJournalIsInjected: the callee died after its
// thread registry kept the conversation a call began (restored live after
// the restart) and its received row, but before the call's journal record
// committed. The call's resend is not a copy — the journal, which alone
// decides, never held it — so it is injected and answered, not refused.
func TestCallWithLiveThreadButNoJournalIsInjected(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	c := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{})
	lt := stage.NewThreadID()
	conv := derivedThread(c.m.secret, "a", lt)
	if err := c.m.db.write("serve", c.m.db.serveRows(conv, "a", lt, time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := c.pump.Threads().Begin(conv, "a", "echo"); err != nil {
		t.Fatal(err)
	}
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.callOn("echo", `<Echo xmlns=""><Text>again</Text></Echo>`, lt, time.Now())
	ack, answers := r.send(call)
	if ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("the call was acknowledged with %+v, want it taken", ack)
	}
	if len(answers) == 0 { // the answer may come before the acknowledgement
		answers = append(answers, r.next())
	}
	a := mustParse(t, answers[0])
	if a.Link.Kind != KindReply || a.Link.Ref != lt || !bytes.Contains(a.Payload, []byte("AGAIN")) {
		t.Fatalf("got %s for %s with %q, want the reply AGAIN to %s", a.Link.Kind, a.Link.Ref, a.Payload, lt)
	}
	if got := c.seen(); len(got) != 1 {
		t.Fatalf("the echo saw %q, want the call once", got)
	}
}
