package federation

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRowClaim: an acknowledgement before the insert cancels it (no row,
// no delete); after it, the row stays to delete; a retried insert runs
// again.
func TestRowClaim(t *testing.T) {
	for _, tc := range []struct {
		name       string
		steps      string // w: write, c: cancel
		wantWrites []bool
		wantCancel []bool
	}{
		{"acknowledged first", "cw", []bool{false}, []bool{true}},
		{"written first", "wc", []bool{true}, []bool{false}},
		{"retried after a rollback", "wwc", []bool{true, true}, []bool{false}},
		{"cancelled once", "ccw", []bool{false}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r rowClaim
			var writes, cancels []bool
			for _, s := range tc.steps {
				if s == 'w' {
					writes = append(writes, r.write())
				} else {
					cancels = append(cancels, r.cancel())
				}
			}
			if !equalBools(writes, tc.wantWrites) || !equalBools(cancels, tc.wantCancel) {
				t.Fatalf("writes %v cancels %v, want %v %v", writes, cancels, tc.wantWrites, tc.wantCancel)
			}
		})
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAcknowledgedAnswerWritesNoOutboxRow: an answer the peer acknowledges
// before its outbox entry commits is never written to the outbox (nor
// deleted from it), while its served row still goes in the commit.
func TestAcknowledgedAnswerWritesNoOutboxRow(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	c := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{BatchDelay: time.Hour})
	// Count the outbox's inserts on the writer's connection.
	if err := c.m.db.write("test: count inserts", func(tx execer) error {
		if _, err := tx.Exec(`CREATE TEMP TABLE outbox_inserts (n INTEGER NOT NULL)`); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO outbox_inserts (n) VALUES (0)`); err != nil {
			return err
		}
		_, err := tx.Exec(`CREATE TEMP TRIGGER count_outbox_inserts AFTER INSERT ON main.federation_outbox
			BEGIN UPDATE outbox_inserts SET n = n + 1; END`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>acked early</Text></Echo>`)
	ack, answers := r.send(call)
	if ack.Type != frameAck {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	raw := r.next
	var b []byte
	if len(answers) > 0 {
		b = answers[0]
	} else {
		b = raw()
	}
	reply := mustParse(t, b)
	if err := r.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: reply.Link.ID}.marshal()); err != nil {
		t.Fatal(err)
	}
	g := c.m.byName["a"]
	for deadline := time.Now().Add(30 * time.Second); g.queued() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the acknowledged answer stays in the outbox")
		}
	}
	if err := c.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var inserts int
	if err := c.m.db.write("test: read count", func(tx execer) error {
		return tx.Query(`SELECT n FROM outbox_inserts`, nil, func(rows *sql.Rows) error { return rows.Scan(&inserts) })
	}); err != nil {
		t.Fatal(err)
	}
	if inserts != 0 {
		t.Fatalf("the outbox took %d inserts for an answer acknowledged before its commit, want 0", inserts)
	}
	conv := derivedThread(c.m.secret, "a", mustParse(t, call).Thread)
	var served int
	if err := c.st.ReadDB().QueryRow(`SELECT count(*) FROM federation_served WHERE conv = ?`, conv).Scan(&served); err != nil || served != 0 {
		t.Fatalf("served rows %d, %v after the answer's commit, want 0", served, err)
	}
}

// TestCallRecordOutlivedIsNotWritten: the record of a call named by its
// message whose handling got its answer and ended before the record's
// insert ran is never written (nor its outbox entry, acknowledged
// meanwhile): the caller's writer is held while the call crosses the link.
func TestCallRecordOutlivedIsNotWritten(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	nameCallsByMessage(a)
	if err := a.m.db.write("test: count inserts", func(tx execer) error {
		for _, q := range []string{
			`CREATE TEMP TABLE state_inserts (n INTEGER NOT NULL)`,
			`INSERT INTO state_inserts (n) VALUES (0)`,
			`CREATE TEMP TRIGGER count_calls AFTER INSERT ON main.federation_calls
				BEGIN UPDATE state_inserts SET n = n + 1; END`,
			`CREATE TEMP TRIGGER count_outbox AFTER INSERT ON main.federation_outbox
				BEGIN UPDATE state_inserts SET n = n + 1; END`,
		} {
			if _, err := tx.Exec(q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
	h := handlingOf{seq: journalMessage(t, a.st, md.ThreadID)}
	release := holdWriter(t, a.st)
	r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a.once, md)
	wantOnce(t, r, err)
	g := a.m.gateways[0]
	waitUntil(t, "the call's acknowledgement", func() bool { return g.queued() == 0 })
	release()
	if err := a.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var inserts int
	if err := a.m.db.write("test: read count", func(tx execer) error {
		return tx.Query(`SELECT n FROM state_inserts`, nil, func(rows *sql.Rows) error { return rows.Scan(&inserts) })
	}); err != nil {
		t.Fatal(err)
	}
	if inserts != 0 {
		t.Fatalf("%d call record and outbox inserts for a call answered and acknowledged before they ran, want 0", inserts)
	}
}

// TestCallDoneDeletesOnlyWhatMayExist: the end of a handling whose call
// record was never written deletes nothing — no statement in the commit
// of its answer — unless the gateway may have kept an answer for the call
// (adoptable), and releases the call's claim either way.
func TestCallDoneDeletesOnlyWhatMayExist(t *testing.T) {
	for _, tc := range []struct {
		name      string
		adoptable bool
		deletes   int
	}{
		{"no answer kept", false, 0},
		{"answers may be kept", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey := newKey(t)
			c := newCallee(t, aKey)
			a := newCaller(t, aKey, c, t.TempDir())
			defer a.m.Close()
			nameCallsByMessage(a)
			if err := a.m.db.write("test: count deletes", func(tx execer) error {
				for _, q := range []string{
					`CREATE TEMP TABLE state_deletes (n INTEGER NOT NULL)`,
					`INSERT INTO state_deletes (n) VALUES (0)`,
					`CREATE TEMP TRIGGER count_call_deletes AFTER DELETE ON main.federation_calls
						BEGIN UPDATE state_deletes SET n = n + 1; END`,
				} {
					if _, err := tx.Exec(q); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			g := a.m.gateways[0]
			g.adoptable.Store(tc.adoptable)
			md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
			h := handlingOf{seq: journalMessage(t, a.st, md.ThreadID)}
			// A row under the call's id that the deletion (by id) finds
			// when it runs, kept under another gateway so that the
			// handling does not adopt it.
			lt := callID(a.m.secret, a.m.db.epoch, g.name, "echo", h.seq, 0)
			if err := a.m.db.write("test: a row to delete", func(tx execer) error {
				// Made now: the sweeper, which runs at the start, leaves it.
				_, err := tx.Exec(`INSERT INTO federation_calls (link_thread, gateway, caller_thread, digest, created)
					VALUES (?, 'elsewhere', '', x'', ?)`, lt, time.Now().UnixNano())
				return err
			}); err != nil {
				t.Fatal(err)
			}
			release := holdWriter(t, a.st)
			r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a.once, md)
			wantOnce(t, r, err)
			release()
			waitUntil(t, "the call's claim released", func() bool {
				g.mu.Lock()
				defer g.mu.Unlock()
				return len(g.claimed) == 0
			})
			if err := a.st.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			var deletes int
			if err := a.m.db.write("test: read count", func(tx execer) error {
				return tx.Query(`SELECT n FROM state_deletes`, nil, func(rows *sql.Rows) error { return rows.Scan(&deletes) })
			}); err != nil {
				t.Fatal(err)
			}
			if deletes != tc.deletes {
				t.Fatalf("%d call record rows deleted, want %d", deletes, tc.deletes)
			}
		})
	}
}
