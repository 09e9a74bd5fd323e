package federation

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// outputHold is a caller's journal into its store that, when the handler
// output it watches for (the proxy's reply to the console) is to be
// journaled, first makes everything queued before it durable and then
// holds it until the peer acknowledged the answer or a while passed: the
// widest window a crash between an answer's acknowledgement and its
// output's commit could have.
type outputHold struct {
	testJournal
	once  sync.Once
	acked chan struct{}
	// window is how long the output waits for an acknowledgement.
	window time.Duration
}

func (j *outputHold) Record(r pump.Record) { j.RecordSeq(r) }

func (j *outputHold) RecordSeq(r pump.Record) int64 {
	if r.Direction == pump.Outbound && r.Kind == pump.RecordMessage && r.From == "echo" {
		j.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = j.st.Write(ctx, "flush", func(*store.Tx) error { return nil })
			select {
			case <-j.acked:
			case <-time.After(j.window):
			}
		})
	}
	return j.testJournal.RecordSeq(r)
}

// newJournaledCaller is newCaller whose pump journals into its store
// through j, as an organism's does: the import's handler runs under
// pump.MessageSeq and pump.AfterJournal of a journaled message. It
// returns the caller's pump and its manager.
func newJournaledCaller(t *testing.T, key ed25519.PrivateKey, c *callee, st *store.Store, j pump.Journal) (*pump.Pump, *Manager) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, j)
	m, err := New(Options{Organism: "a", Key: key, Pump: p, Logger: log, Store: st,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key),
			Import: []string{"Echo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	importEcho(t, m)
	m.Start()
	return p, m
}

// TestAnswerAcknowledgedOnceItsOutputIsDurable: the caller acknowledges
// the peer's answer only once the handler output that carries it (the
// import's reply to its caller) is durable in the caller's journal. When
// the peer has the acknowledgement — and deletes the answer — a crash of
// the caller can no longer lose that output; else the message re-delivered
// after the restart would call again under the same id, which the peer
// refuses as a copy, and never be answered. The caller's journal holds the
// output back as long as it may (everything queued before it made durable
// first), and the callee reads the caller's committed journal, through a
// connection of its own, the moment the acknowledgement arrives.
func TestAnswerAcknowledgedOnceItsOutputIsDurable(t *testing.T) {
	aKey, dir := newKey(t), t.TempDir()
	c := newCallee(t, aKey)
	st := openStore(t, dir, slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller"))
	ro, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })

	j := &outputHold{testJournal: testJournal{st}, acked: make(chan struct{}), window: 2 * time.Second}
	var ackOnce sync.Once
	var thread string
	threadSet := make(chan struct{})
	durable := make(chan bool, 1)
	c.m.onAcked = func(env []byte) {
		e, err := parse(env)
		if err != nil || e.Link.Kind != KindReply {
			return
		}
		ackOnce.Do(func() {
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
			durable <- found
			close(j.acked)
		})
	}
	p, _ := newJournaledCaller(t, aKey, c, st, j)

	out := make(chan pump.Event, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	thread, err = p.Send(ctx, "console", "echo", &Echo{Text: "once"}, pump.OutletFunc(func(ev pump.Event) {
		select {
		case out <- ev:
		default:
		}
	}))
	close(threadSet)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-out:
		if ev.Kind != pump.EventReply || ev.From != "echo" {
			t.Fatalf("the caller got %s from %s (%s), want the echo's reply", ev.Kind, ev.From, ev.Error)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call was never answered")
	}
	select {
	case ok := <-durable:
		if !ok {
			t.Fatal("the peer had the answer's acknowledgement before the caller's journal held the output carrying it")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the answer was never acknowledged")
	}
}

// TestAdoptedAnswerForgottenOnceItsOutputIsDurable: an answer kept for a
// call made before a restart (acknowledged when it was kept) is given to
// the re-delivered message that adopts the call; the call's record, which
// holds the answer, is deleted only once the pump journaled the handler's
// output (pump.AfterJournal), so a crash before that output commits finds
// the answer again.
func TestAdoptedAnswerForgottenOnceItsOutputIsDurable(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	dir, md, h := crashAfterSend(t, aKey, c)

	a2 := newCaller(t, aKey, c, dir)
	defer a2.m.Close()
	nameCallsByMessage(a2)
	var after []func()
	a2.m.afterJournal = func(_ context.Context, fn, _ func()) { after = append(after, fn) }
	hold <- struct{}{}
	lt := callID(a2.m.secret, a2.m.db.epoch, "b", "echo", h.seq, 0)
	waitUntil(t, "the answer was never kept", func() bool {
		found, answer, err := a2.m.db.callByID("b", lt)
		return err == nil && found && answer != nil
	})
	r, err := a2.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a2.once, md)
	wantOnce(t, r, err)
	if len(after) != 1 {
		t.Fatalf("the handling left %d functions for after its output is journaled, want 1", len(after))
	}
	// Everything the handling queued commits; the record must still hold
	// the answer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a2.st.Write(ctx, "flush", func(*store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if found, answer, err := a2.m.db.callByID("b", lt); err != nil || !found || answer == nil {
		t.Fatalf("before the handler's output is journaled the call's record is gone (found %v, error %v)", found, err)
	}
	after[0]() // the output is journaled
	waitUntil(t, "the call's record stayed once the output was journaled", func() bool {
		found, _, err := a2.m.db.callByID("b", lt)
		return err == nil && !found
	})
}
