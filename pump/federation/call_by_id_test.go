package federation

import (
	"context"
	"crypto/ed25519"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// handlingKey carries, in a test's context, the journal seq of the message
// a handling handles and whether it is re-delivered, as pump.MessageSeq
// gives them to a handler the pump runs.
type handlingKey struct{}

// handlingOf is a test's pump.MessageSeq.
type handlingOf struct {
	seq       int64
	recovered bool
}

// nameCallsByMessage makes a's manager read the handling from the test's
// context.
func nameCallsByMessage(a *caller) {
	a.m.messageSeq = func(ctx context.Context) (int64, bool) {
		h, _ := ctx.Value(handlingKey{}).(handlingOf)
		return h.seq, h.recovered
	}
}

// journalMessage journals a message in st as the pump would (the one the
// handler handles) and returns its seq once it is durable.
func journalMessage(t *testing.T, st *store.Store, thread string) int64 {
	t.Helper()
	seq, err := st.AppendSync(context.Background(), store.Entry{Thread: thread, Conversation: thread,
		Direction: store.Inbound, Kind: store.Message, From: "console", To: "echo", PayloadTag: "Echo",
		Bytes: []byte(`<Echo><Text>once</Text></Echo>`)})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// holdWriter holds st's writer inside a transaction, so that nothing
// commits until the returned release is called (also at the test's end).
func holdWriter(t *testing.T, st *store.Store) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := st.WriteNow("hold", func(*store.Tx) error {
		close(entered)
		<-gate
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return release
}

// snapshot copies the database files of dir to a new directory: what a
// SIGKILL at this moment leaves (a transaction not committed is not in it).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{store.DatabaseFileName, store.DatabaseFileName + "-wal"} {
		in, err := os.Open(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(to, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		_ = in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// waitUntil polls cond until it holds, failing after 60 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// wantOnce checks the answer of an echo call.
func wantOnce(t *testing.T, r xmlpipe.Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	rr, ok := r.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response %T", r)
	}
	if text, _ := stage.PayloadText(rr.Payload); text != "ONCE" {
		t.Fatalf("answer %#v", rr.Payload)
	}
}

// crashAfterSend makes a call named by a durable message's seq that reaches
// the callee while its record and outbox entry wait for a commit (the
// caller's writer is held), and returns what a SIGKILL of the caller at
// that moment leaves: a copy of its data directory without them. The
// first caller is stopped without its link carrying anything more.
func crashAfterSend(t *testing.T, aKey ed25519.PrivateKey, c *callee) (dir string, md xmlpipe.Metadata, h handlingOf) {
	t.Helper()
	dir1 := t.TempDir()
	md = xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
	a1 := newCaller(t, aKey, c, dir1)
	nameCallsByMessage(a1)
	h = handlingOf{seq: journalMessage(t, a1.st, md.ThreadID)}
	release := holdWriter(t, a1.st)
	first := make(chan error, 1)
	go func() {
		_, err := a1.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a1.once, md)
		first <- err
	}()
	waitUntil(t, "the call never reached the callee", func() bool { return len(c.seen()) == 1 })
	dir = snapshot(t, dir1)
	if found, err := recordsCalls(t, dir, "b"); err != nil || found {
		t.Fatalf("the snapshot holds the call's record (%v, %v): the crash window was missed", found, err)
	}
	release()
	a1.stop(t)
	if err := <-first; err == nil {
		t.Fatal("the first handling returned no error when its manager stopped")
	}
	h.recovered = true
	return dir, md, h
}

// recordsCalls reports whether the state in dir records a call of gw.
func recordsCalls(t *testing.T, dir, gw string) (bool, error) {
	t.Helper()
	st := openStore(t, dir, nil)
	defer closeStore(t, st)
	d, err := openDB(st, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = d.close() }()
	return d.hasCalls(gw)
}

// refusedCopy reports whether the callee refused a copy of a call.
func refusedCopy(c *callee) bool {
	return strings.Contains(c.logs.String(), "copy of a call already received refused")
}

// TestCallSentBeforeItsRecordSurvivesCallerCrash: a call named by its
// message leaves before its record commits. The caller dies in between
// (its record and outbox entry lost); the message, re-delivered after the
// restart, makes the call again under the same id: the callee refuses the
// copy and its one answer reaches the re-delivered handling.
func TestCallSentBeforeItsRecordSurvivesCallerCrash(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	dir, md, h := crashAfterSend(t, aKey, c)

	a2 := newCaller(t, aKey, c, dir)
	defer a2.m.Close()
	nameCallsByMessage(a2)
	type result struct {
		r   xmlpipe.Response
		err error
	}
	answered := make(chan result, 1)
	go func() {
		r, err := a2.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a2.once, md)
		answered <- result{r, err}
	}()
	// The copy reached the callee and was refused (or is in flight there).
	waitUntil(t, "the callee never refused the copy", func() bool {
		return refusedCopy(c)
	})
	hold <- struct{}{} // the callee's echo answers: once
	select {
	case got := <-answered:
		wantOnce(t, got.r, got.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the re-delivered handling got no answer")
	}
	if got := c.seen(); len(got) != 1 {
		t.Fatalf("the callee saw %d calls, want 1: %q", len(got), got)
	}
}

// TestAnswerBeforeRedeliveryKept: as above, but the callee answers before
// the re-delivered message makes its call again: the answer, to a call the
// restarted caller has no record of, is kept, and the re-delivered handling
// takes it without calling again.
func TestAnswerBeforeRedeliveryKept(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	dir, md, h := crashAfterSend(t, aKey, c)

	a2 := newCaller(t, aKey, c, dir)
	defer a2.m.Close()
	nameCallsByMessage(a2)
	hold <- struct{}{}
	lt := callID(a2.m.secret, a2.m.db.epoch, "b", "echo", h.seq, 0)
	waitUntil(t, "the answer was never kept", func() bool {
		found, answer, err := a2.m.db.callByID("b", lt)
		return err == nil && found && answer != nil
	})
	r, err := a2.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a2.once, md)
	wantOnce(t, r, err)
	if got := c.seen(); len(got) != 1 {
		t.Fatalf("the callee saw %d calls, want 1: %q", len(got), got)
	}
	if refusedCopy(c) {
		t.Fatal("the callee refused a copy: the kept answer was not used")
	}
}

// TestIdenticalCallsOfTwoMessagesAreTwo: two messages with the same payload
// on the same thread are two calls, each named by its own message.
func TestIdenticalCallsOfTwoMessagesAreTwo(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	nameCallsByMessage(a)
	md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
	for i := range 2 {
		h := handlingOf{seq: journalMessage(t, a.st, md.ThreadID)}
		r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a.once, md)
		wantOnce(t, r, err)
		if got := c.seen(); len(got) != i+1 {
			t.Fatalf("after message %d the callee saw %d calls: %q", i+1, len(got), got)
		}
	}
}

// TestCallWaitsForItsMessage: a call does not leave before the message
// that makes it is durable (a crash could lose the message and run the
// handler that sent it again, calling a second time).
func TestCallWaitsForItsMessage(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	nameCallsByMessage(a)
	md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
	release := holdWriter(t, a.st)
	seq, err := a.st.AppendSeq(store.Entry{Thread: md.ThreadID, Conversation: md.ThreadID, Direction: store.Inbound,
		Kind: store.Message, From: "console", To: "echo", PayloadTag: "Echo", Bytes: []byte(`<Echo><Text>once</Text></Echo>`)})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   xmlpipe.Response
		err error
	}
	answered := make(chan result, 1)
	go func() {
		r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, handlingOf{seq: seq}), a.once, md)
		answered <- result{r, err}
	}()
	// The handling has signed its call and waits: give it the time a
	// call takes on loopback many times over, then check nothing left.
	g := a.m.gateways[0]
	waitUntil(t, "the handling never made its call", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.pending) > 0
	})
	time.Sleep(200 * time.Millisecond)
	if got := c.seen(); len(got) != 0 {
		t.Fatalf("the call left before its message was durable: %q", got)
	}
	release()
	select {
	case got := <-answered:
		wantOnce(t, got.r, got.err)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer once the message was durable")
	}
}

// TestInterruptedHandlingCallsAnew: a handling whose context ends before
// its answer, on a thread the pump does not hold (so no handling of its
// message waits on the call: holdCall), cancels its call; when the same
// message is handled again in the same life it calls anew, under another
// id (the peer would refuse the first one's as a copy).
func TestInterruptedHandlingCallsAnew(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	nameCallsByMessage(a)
	md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
	h := handlingOf{seq: journalMessage(t, a.st, md.ThreadID)}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), handlingKey{}, h))
	first := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(ctx, a.once, md)
		first <- err
	}()
	waitUntil(t, "the first call never reached the callee", func() bool { return len(c.seen()) == 1 })
	cancel()
	if err := <-first; err == nil {
		t.Fatal("the interrupted handling returned no error")
	}
	close(hold)
	r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a.once, md)
	wantOnce(t, r, err)
	if got := c.seen(); len(got) != 2 {
		t.Fatalf("the callee saw %d calls, want 2: %q", len(got), got)
	}
}
