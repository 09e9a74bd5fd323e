package federation

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// testJournal journals the pump's records into a store, durably (the pump
// waits for them), as an organism's journal does.
type testJournal struct{ st *store.Store }

func (j testJournal) Record(r pump.Record) { j.RecordSeq(r) }

func (j testJournal) RecordSeq(r pump.Record) int64 {
	e := store.Entry{Time: r.Time, Thread: r.Thread, Conversation: r.Conversation, Direction: store.Outbound,
		Kind: store.Message, From: r.From, To: r.To, Listener: r.Listener, PayloadTag: r.PayloadTag, Bytes: r.Envelope}
	if r.Direction == pump.Inbound {
		e.Direction = store.Inbound
	}
	switch r.Kind {
	case pump.RecordMessage:
	case pump.RecordHuh:
		e.Kind = store.Huh
	default:
		e.Kind = store.SystemError
	}
	for _, f := range []*string{&e.Thread, &e.From} {
		if *f == "" {
			*f = "-"
		}
	}
	if len(e.Bytes) == 0 {
		e.Bytes = []byte("<record/>")
	}
	seq, err := j.st.AppendSeq(e)
	if err != nil {
		return 0
	}
	return seq
}

// Delivered marks seq delivered, as an organism's journal does.
func (j testJournal) Delivered(seq int64) { _ = j.st.MarkDelivered(seq) }

func (j testJournal) Assigned() int64 { return j.st.Assigned() }

func (j testJournal) WaitDurable(ctx context.Context, seq int64) error {
	return j.st.WaitDurable(ctx, seq)
}

// TestReceivedCallRidesWithItsJournalCommit: where the pump journals into
// the store that keeps the federation state, a received call forces no
// commit of its own: its journal record and its received and served rows
// ride with the commit the pump forces for its conversation's answer, so
// the call and its answer cost the callee one commit before the answer
// leaves (with a batch delay of an hour, nothing else commits), and the
// acknowledgement waits for that commit but not for the done mark (the
// journal decides for a row not done). A crash that loses the mark leaves
// the journal to refuse the call's copy.
func TestReceivedCallRidesWithItsJournalCommit(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	c := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{BatchDelay: time.Hour})
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>one</Text></Echo>`)
	sent, err := parse(call)
	if err != nil {
		t.Fatal(err)
	}
	conv := derivedThread(c.m.secret, "a", sent.Thread)
	// Whatever the link's start queued commits first, and the sweep at
	// the start, so that only the call's commits are counted.
	<-c.m.firstSwept
	if err := c.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	commits0 := c.st.Stats().Commits
	// The answer waits here, before its outbox entry (which forces a
	// commit) is queued.
	answering, release := make(chan struct{}), make(chan struct{})
	c.m.beforeAnswer = func(string) {
		close(answering)
		<-release
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	if ack, _ := r.send(call); ack.Type != frameAck || ack.Duplicate || ack.ID != sent.Link.ID {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	<-answering
	if n := c.st.Stats().Commits - commits0; n != 1 {
		t.Fatalf("the call and its answer cost the callee %d commits before the answer left, want 1", n)
	}
	if es, err := c.st.Thread(conv); err != nil || len(es) < 2 {
		t.Fatalf("the acknowledged call and its answer are not journaled together: %d entries, %v", len(es), err)
	}
	done := func() int {
		t.Helper()
		var d int
		if err := c.st.ReadDB().QueryRow(`SELECT done FROM federation_received WHERE conv = ?`, conv).Scan(&d); err != nil {
			t.Fatalf("the received row is not committed with the call's journal record: %v", err)
		}
		return d
	}
	var served int
	if err := c.st.ReadDB().QueryRow(`SELECT count(*) FROM federation_served WHERE conv = ?`, conv).Scan(&served); err != nil || served != 1 {
		t.Fatalf("the served row is not committed with the call's journal record: %d, %v", served, err)
	}
	if d := done(); d != 0 {
		t.Fatalf("received done = %d at the acknowledgement, want 0 (the mark rides a later commit)", d)
	}

	// The answer leaves before its outbox entry commits; the entry and
	// the mark ride a later commit, which they do not force.
	released = true
	close(release)
	reply, err := parse(r.next())
	if err != nil || reply.Link.Kind != KindReply || reply.Link.Ref != sent.Link.ID {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	if n := c.st.Stats().Commits - commits0; n != 1 {
		t.Fatalf("the answer's outbox entry forced a commit: %d commits, want 1", n)
	}
	if err := c.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := done(); d != 1 {
		t.Fatalf("received done = %d after a commit, want 1", d)
	}
	if err := c.st.ReadDB().QueryRow(`SELECT count(*) FROM federation_served WHERE conv = ?`, conv).Scan(&served); err != nil || served != 0 {
		t.Fatalf("the served row is left after the answer's entry committed: %d, %v", served, err)
	}

	// Lose the mark (as a crash before its commit would) and restart: the
	// journal holds the call, so its copy is refused.
	stopCallee(t, c)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE federation_received SET done = 0`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{})
	r2, err := dialRaw(t, c2, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r2.send(call); ack.Type != frameAck || !ack.Duplicate {
		t.Fatalf("the copy of a journaled call whose mark was lost: %+v, want a duplicate", ack)
	}
	if got := append(c.seen(), c2.seen()...); len(got) != 1 {
		t.Fatalf("the echo saw %q, want the call once", got)
	}
}

// TestCallAcknowledgedWhileItsHandlerRuns: a call whose handler has not
// answered yet is acknowledged once the batch delay commits its journal
// record: its acknowledgement forces no commit, but waits for no answer
// either.
func TestCallAcknowledgedWhileItsHandlerRuns(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	hold := make(chan struct{})
	defer close(hold)
	c := newCalleeWith(t, aKey, bKey, dir, hold, &store.Options{BatchDelay: 20 * time.Millisecond})
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>slow</Text></Echo>`)
	sent := mustParse(t, call)
	ack, answers := r.send(call)
	if ack.Type != frameAck || ack.Duplicate || ack.ID != sent.Link.ID || len(answers) != 0 {
		t.Fatalf("call acknowledged with %+v (answers %d)", ack, len(answers))
	}
	conv := derivedThread(c.m.secret, "a", sent.Thread)
	if es, err := c.st.Thread(conv); err != nil || len(es) != 1 {
		t.Fatalf("the acknowledged call: %d entries journaled, %v; want the call alone", len(es), err)
	}
}

// TestCallRefusedWhenRowsFail: a call whose received and served rows cannot
// be written, as a state in memory tells at once, is refused before it is
// injected (its resend is a new call).
func TestCallRefusedWhenRowsFail(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.m.db.b.reads().Exec(`DROP TABLE federation_served`); err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>unrecorded</Text></Echo>`)
	if ack, _ := r.send(call); ack.Type != frameNack {
		t.Fatalf("a call whose rows failed: %+v, want a refusal", ack)
	}
	if got := c.seen(); len(got) != 0 {
		t.Fatalf("the echo saw %q", got)
	}
	conv := derivedThread(c.m.secret, "a", mustParse(t, call).Thread)
	if state, err := c.m.db.received(conv); err != nil || state != callNew {
		t.Fatalf("received = %d, %v after the refusal, want it new", state, err)
	}
	if c.m.serving(conv) {
		t.Fatal("the refused call's conversation is served")
	}
}

// mustParse parses a signed envelope.
func mustParse(t *testing.T, b []byte) *envelope {
	t.Helper()
	e, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
