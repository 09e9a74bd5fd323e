package federation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// callRows counts the rows the caller's store wrote into the call records
// and the outbox (statements run inside its writer's transactions).
func callRows(a *caller) (calls, outbox int64) {
	for _, s := range a.st.StatementCounts() {
		switch {
		case strings.HasPrefix(s.Query, "INSERT INTO federation_calls"):
			calls += s.Rows
		case strings.HasPrefix(s.Query, "INSERT INTO federation_outbox"):
			outbox += s.Rows
		}
	}
	return calls, outbox
}

// TestAnsweredCallWritesNoRows: a call named by its message that is
// answered and acknowledged before its rows' delay has neither its record
// nor its outbox entry written, at any commit — not even at the stop —
// and what they would be written from is let go as soon as both are
// cancelled.
func TestAnsweredCallWritesNoRows(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	nameCallsByMessage(a)
	a.m.db.callRowsDelay = time.Hour // longer than any answer takes
	md := callMetadata()
	h := handlingOf{seq: journalMessage(t, a.st, md.ThreadID)}
	r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a.once, md)
	wantOnce(t, r, err)
	waitUntil(t, "the call was never acknowledged", func() bool { return a.m.gateways[0].queued() == 0 })
	// What the call's rows would be written from is let go at once, not
	// held until their delay.
	waitUntil(t, "the answered call's deferred write is still held", func() bool {
		a.m.db.deferred.mu.Lock()
		defer a.m.db.deferred.mu.Unlock()
		return len(a.m.db.deferred.writes) == 0
	})
	if err := a.m.Close(); err != nil {
		t.Fatal(err)
	}
	if calls, outbox := callRows(a); calls != 0 || outbox != 0 {
		t.Fatalf("an answered call wrote %d call records and %d outbox entries, want none", calls, outbox)
	}
	closeStore(t, a.st)
}

// TestOpenCallRecordedAtStop: a call still open when the organism stops
// before its rows' delay is recorded by the stop, so that the message
// re-delivered at the next start adopts it rather than calling again.
func TestOpenCallRecordedAtStop(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	dir := t.TempDir()
	a := newCaller(t, aKey, c, dir)
	nameCallsByMessage(a)
	a.m.db.callRowsDelay = time.Hour
	md := callMetadata()
	h := handlingOf{seq: journalMessage(t, a.st, md.ThreadID)}
	type result struct {
		r   xmlpipe.Response
		err error
	}
	answered := make(chan result, 1)
	go func() {
		r, err := a.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a.once, md)
		answered <- result{r, err}
	}()
	waitUntil(t, "the callee never got the call", func() bool { return len(c.seen()) == 1 })
	if calls, _ := callRows(a); calls != 0 {
		t.Fatalf("the call's record was written before its delay: %d rows", calls)
	}
	if err := a.m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-answered:
		if got.err == nil {
			t.Fatalf("the stop did not end the call's wait: %v", got.r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call still waits 60s after the stop")
	}
	if calls, _ := callRows(a); calls != 1 {
		t.Fatalf("the stop wrote %d call records, want the open call's", calls)
	}
	closeStore(t, a.st)

	// The message, re-delivered after a restart, adopts the call.
	a2 := newCaller(t, aKey, c, dir)
	defer a2.m.Close()
	nameCallsByMessage(a2)
	h.recovered = true
	go func() {
		r, err := a2.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a2.once, md)
		answered <- result{r, err}
	}()
	waitUntil(t, "the re-delivered message made no call", func() bool {
		a2.m.gateways[0].mu.Lock()
		defer a2.m.gateways[0].mu.Unlock()
		return len(a2.m.gateways[0].pending) == 1
	})
	hold <- struct{}{}
	select {
	case got := <-answered:
		wantOnce(t, got.r, got.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the re-delivered handling got no answer")
	}
	if got := c.seen(); len(got) != 1 {
		t.Fatalf("the callee saw %d calls, want 1: %q", len(got), got)
	}
}
