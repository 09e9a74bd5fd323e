package organism

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// goneAfterSend is a request context whose client goes away once the
// decision is on its way to the store: the first Done (the store's queue
// send) is nil, every later one is closed.
type goneAfterSend struct {
	context.Context
	calls atomic.Int32
}

func (c *goneAfterSend) Done() <-chan struct{} {
	if c.calls.Add(1) == 1 {
		return nil
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

func (c *goneAfterSend) Err() error {
	if c.calls.Load() > 1 {
		return context.Canceled
	}
	return nil
}

// TestApprovalDecisionOutlivesItsRequest: an operator whose request goes
// away (curl's timeout, a closed tab) while the decision is being
// committed does not leave the approval decided in the store yet pending
// here — unsettled for good, and answering every later decision with "was
// approved already". The decision is recorded and returned whole.
func TestApprovalDecisionOutlivesItsRequest(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := newApprovalBook(s)
	defer b.stop()
	now := time.Now()
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"} {
		a := Approval{ID: id, Kind: KindTool, Seq: 1, Conversation: "c", Thread: "t", Agent: "researcher",
			Target: "run_command", Payload: "<x/>", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Status: StatusPending}
		if err := b.add(a, func(string) {}); err != nil {
			t.Fatal(err)
		}
		d, err := b.decide(&goneAfterSend{Context: context.Background()}, id, StatusApproved, "olga", "fine", time.Now())
		if err != nil {
			t.Fatalf("%s: the decision failed with its request gone: %v", id, err)
		}
		if d.Status != StatusApproved || d.DecidedBy != "olga" {
			t.Fatalf("%s: decided %+v", id, d)
		}
		if p := b.pendingList(); len(p) != 0 {
			t.Fatalf("%s: still pending here after its decision: %+v", id, p)
		}
	}
}

// TestApprovalUnrecordedDecisionStillExpires: a decision the store could
// not record leaves the approval pending — and still timing out, rather
// than waiting for ever.
func TestApprovalUnrecordedDecisionStillExpires(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := newApprovalBook(s)
	defer b.stop()
	expired := make(chan string, 1)
	now := time.Now()
	a := Approval{ID: "a1", Kind: KindTool, Seq: 1, Conversation: "c", Thread: "t", Agent: "researcher",
		Target: "run_command", Payload: "<x/>", CreatedAt: now, ExpiresAt: now.Add(time.Second), Status: StatusPending}
	if err := b.add(a, func(id string) { expired <- id }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.decide(context.Background(), "a1", StatusApproved, "olga", "", time.Now()); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("decide with the store closed: %v", err)
	}
	if p := b.pendingList(); len(p) != 1 {
		t.Fatalf("pending after an unrecorded decision: %+v", p)
	}
	select {
	case id := <-expired:
		if id != "a1" {
			t.Fatalf("expired %q", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the approval never expired after its decision could not be recorded")
	}
}
