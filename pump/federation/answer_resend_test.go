package federation

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// releasedHold is a caller's journal into its store that, when the handler
// output it watches for (the proxy's reply to the console) is to be
// journaled, first makes everything queued before it durable, then says
// so (held) and holds the output until the test releases it.
type releasedHold struct {
	testJournal
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (j *releasedHold) Record(r pump.Record) { j.RecordSeq(r) }

func (j *releasedHold) RecordSeq(r pump.Record) int64 {
	if r.Direction == pump.Outbound && r.Kind == pump.RecordMessage && r.From == "echo" {
		j.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = j.st.Write(ctx, "flush", func(*store.Tx) error { return nil })
			close(j.held)
			select {
			case <-j.release:
			case <-time.After(30 * time.Second): // the test failed before releasing it
			}
		})
	}
	return j.testJournal.RecordSeq(r)
}

// TestAnswerResentAfterReconnectAcknowledgedOnceOutputIsDurable: a real
// callee answers a real caller's call; while the caller's journal holds
// back the handler output carrying the answer (so the answer's
// acknowledgement is deferred), the caller's link drops and the caller
// dials again, and the callee sends its outbox — the answer — once more on
// the new link. The caller must not acknowledge that copy (which would
// let the callee delete the answer) before the output is durable: the
// callee reads the caller's committed journal the moment any
// acknowledgement of the answer arrives. Once the output is released the
// copy is acknowledged (the original's acknowledgement goes to the closed
// link and is lost), the callee's outbox empties, and the caller's
// handler was answered once.
func TestAnswerResentAfterReconnectAcknowledgedOnceOutputIsDurable(t *testing.T) {
	aKey, dir := newKey(t), t.TempDir()
	c := newCallee(t, aKey)
	cg := c.m.gateways[0]
	st := openStore(t, dir, slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller"))
	ro, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })

	j := &releasedHold{testJournal: testJournal{st}, held: make(chan struct{}), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(j.release) }) }
	var thread string
	threadSet := make(chan struct{})
	type ack struct {
		id      string
		durable bool
	}
	acks := make(chan ack, 16)
	c.m.onAcked = func(env []byte) {
		e, err := parse(env)
		if err != nil || e.Link.Kind != KindReply {
			return
		}
		<-threadSet
		es, err := ro.Thread(thread)
		if err != nil {
			t.Error(err)
		}
		found := false
		for _, e := range es {
			if e.From == "echo" && e.Direction == store.Outbound {
				found = true
			}
		}
		acks <- ack{id: e.Link.ID, durable: found}
	}
	p, m := newJournaledCaller(t, aKey, c, st, j)
	t.Cleanup(release) // before the caller closes (cleanups run last first)
	ag := m.gateways[0]

	var replies atomic.Int32
	out := make(chan pump.Event, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	thread, err = p.Send(ctx, "console", "echo", &Echo{Text: "once"}, pump.OutletFunc(func(ev pump.Event) {
		if ev.Kind == pump.EventReply {
			replies.Add(1)
		}
		select {
		case out <- ev:
		default:
		}
	}))
	close(threadSet)
	if err != nil {
		t.Fatal(err)
	}

	// The answer reached the caller and its handler's output is held: the
	// answer's acknowledgement waits for it.
	select {
	case <-j.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the caller's handler output never came to be journaled")
	}
	cg.mu.Lock()
	answers := 0
	for _, e := range cg.outbox {
		if k, err := parse(e.env); err == nil && k.Link.Kind == KindReply {
			answers++
		}
	}
	cg.mu.Unlock()
	if answers != 1 {
		t.Fatalf("the callee's outbox holds %d answers while the caller's output is held, want 1", answers)
	}

	// The caller's link drops; the caller dials again and the callee, on
	// the new link, sends the answer once more.
	ag.mu.Lock()
	old, oldGen := ag.conn, ag.gen
	ag.mu.Unlock()
	if old == nil {
		t.Fatal("the caller has no link")
	}
	old.close(errors.New("test: the link drops"))
	waitUntil(t, "the caller never dialled the callee again", func() bool {
		ag.mu.Lock()
		defer ag.mu.Unlock()
		return ag.gen > oldGen && ag.conn != nil && ag.conn != old
	})
	// The copy is either kept to be acknowledged with the held original
	// or (wrongly) acknowledged at once.
	waitUntil(t, "the callee's resent answer never reached the caller", func() bool {
		if len(acks) > 0 {
			return true
		}
		ag.unsettled.mu.Lock()
		defer ag.unsettled.mu.Unlock()
		for _, o := range ag.unsettled.byHash {
			if len(o.copies) > 0 {
				return true
			}
		}
		return false
	})
	select {
	case a := <-acks:
		t.Fatalf("the callee had an acknowledgement of answer %s (output durable: %v) while the caller's output was held",
			a.id, a.durable)
	default:
	}

	release() // the output commits
	select {
	case ev := <-out:
		if ev.Kind != pump.EventReply || ev.From != "echo" {
			t.Fatalf("the caller got %s from %s (%s), want the echo's reply", ev.Kind, ev.From, ev.Error)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call was never answered")
	}
	select {
	case a := <-acks:
		if !a.durable {
			t.Fatalf("the callee had answer %s's acknowledgement before the caller's journal held the output carrying it", a.id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the answer was never acknowledged")
	}
	waitUntil(t, "the callee's outbox kept the answer once it was acknowledged", func() bool {
		cg.mu.Lock()
		defer cg.mu.Unlock()
		for _, e := range cg.outbox {
			if k, err := parse(e.env); err == nil && k.Link.Kind == KindReply {
				return false
			}
		}
		return true
	})
	waitUntil(t, "the caller kept the answer unsettled once it was acknowledged", func() bool {
		ag.unsettled.mu.Lock()
		defer ag.unsettled.mu.Unlock()
		return len(ag.unsettled.byHash) == 0
	})
	if n := replies.Load(); n != 1 {
		t.Fatalf("the caller's handler was answered %d times, want 1", n)
	}
}
