package federation

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// haltRig is a journaled caller of a real callee over TLS on loopback,
// with the proxy handling held at one step (proxyHook) the first time it
// reaches it, and what the caller's conversation was answered.
type haltRig struct {
	c    *callee
	p    *pump.Pump
	m    *Manager
	g    *gateway
	hold chan struct{} // the callee's echo waits for it (closed: never)
	// at receives the call's link thread when the handling reaches the
	// step; release lets it go on.
	at      chan string
	release chan struct{}

	mu      sync.Mutex
	replies int
	huhs    []string // the errors the conversation was answered with
	thread  string
}

// newHaltRig starts a callee whose echo waits for rig.hold (held: until
// the test closes it; else closed already) and a journaled caller whose
// proxy handling stops at step.
func newHaltRig(t *testing.T, step proxyStep, held bool) *haltRig {
	t.Helper()
	return newHaltRigWith(t, step, held, true)
}

// newHaltRigWith is newHaltRig with a caller that has a store (journaled:
// its calls are named by their message) or none (named by their digest).
func newHaltRigWith(t *testing.T, step proxyStep, held, journaled bool) *haltRig {
	t.Helper()
	aKey, dir := newKey(t), t.TempDir()
	r := &haltRig{hold: make(chan struct{}), at: make(chan string, 1), release: make(chan struct{})}
	if !held {
		close(r.hold)
	}
	r.c = newCalleeHolding(t, aKey, r.hold)
	t.Cleanup(func() {
		select {
		case <-r.hold:
		default:
			close(r.hold)
		}
	})
	if journaled {
		st := openStore(t, dir, slog.New(slog.NewTextHandler(r.c.logs, nil)).With("side", "caller"))
		r.p, r.m = newJournaledCaller(t, aKey, r.c, st, testJournal{st})
	} else {
		r.p, r.m = newJournaledCaller(t, aKey, r.c, nil, nil)
	}
	r.g = r.m.gateways[0]
	var once sync.Once
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
	})
	r.m.proxyHook = func(at proxyStep, lt string) {
		if at == step {
			once.Do(func() {
				r.at <- lt
				<-r.release
			})
		}
	}
	return r
}

// send sends the console's Echo to the import and returns the call's link
// thread once the handling reached the rig's step.
func (r *haltRig) send(t *testing.T) string {
	t.Helper()
	r.start(t)
	select {
	case lt := <-r.at:
		return lt
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy handling never reached its step")
		return ""
	}
}

// start sends the console's Echo to the import, counting the replies the
// conversation gets.
func (r *haltRig) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	thread, err := r.p.Send(ctx, "console", "echo", &Echo{Text: "once"}, pump.OutletFunc(func(ev pump.Event) {
		switch {
		case ev.Kind == pump.EventReply && ev.From == "echo":
			r.mu.Lock()
			r.replies++
			r.mu.Unlock()
		case ev.Kind == pump.EventHuh:
			r.mu.Lock()
			r.huhs = append(r.huhs, ev.Error)
			r.mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.thread = thread
	r.mu.Unlock()
}

func (r *haltRig) answered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replies
}

// halt halts every listener of the caller: the proxy handling's context
// is cancelled, its message put back for after Unhalt.
func (r *haltRig) halt(t *testing.T) {
	t.Helper()
	if _, err := r.p.Halt(pump.HaltAll); err != nil {
		t.Fatal(err)
	}
}

// waitParked waits until the gateway parked the answer of call lt.
func (r *haltRig) waitParked(t *testing.T, lt string) {
	t.Helper()
	r.waitGateway(t, "the answer of the halted handling was never parked", func(g *gateway) bool {
		return g.parked[lt] != nil && g.parked[lt].e != nil
	})
}

// waitGateway waits until cond holds of the caller's gateway, checked
// under its lock.
func (r *haltRig) waitGateway(t *testing.T, what string, cond func(g *gateway) bool) {
	t.Helper()
	waitUntil(t, what, func() bool {
		r.g.mu.Lock()
		defer r.g.mu.Unlock()
		return cond(r.g)
	})
}

// haltDuringTheWait starts the conversation, halts the caller while the
// callee holds the call, and returns the call's link thread once the
// halted handling stopped waiting (held at proxyStopping).
func (r *haltRig) haltDuringTheWait(t *testing.T) string {
	t.Helper()
	r.start(t)
	waitUntil(t, "the call never reached the callee", func() bool { return len(r.c.seen()) == 1 })
	r.halt(t)
	select {
	case lt := <-r.at:
		return lt
	case <-time.After(30 * time.Second):
		t.Fatal("the halted handling never stopped waiting")
		return ""
	}
}

// haltWhileWaiting is haltDuringTheWait, the handling then let go: it
// returns once the call is held open (holdCall).
func (r *haltRig) haltWhileWaiting(t *testing.T) string {
	t.Helper()
	lt := r.haltDuringTheWait(t)
	close(r.release)
	r.waitGateway(t, "the call was never held open for the next handling", func(g *gateway) bool {
		p := g.parked[lt]
		return p != nil && p.e == nil && g.pending[lt] == nil
	})
	return lt
}

// settled waits until the caller forgot every call (forgotten) and checks
// that no call record is left.
func (r *haltRig) settled(t *testing.T) {
	t.Helper()
	r.forgotten(t)
	if found, err := r.m.db.hasCalls("b"); err != nil || found {
		t.Fatalf("a call record is left in federation_calls (%v, %v)", found, err)
	}
}

// forgotten waits until the peer's outbox is empty (what it sent
// acknowledged) and the caller's gateway holds no call (none claimed,
// parked or pending).
func (r *haltRig) forgotten(t *testing.T) {
	t.Helper()
	waitUntil(t, "the peer's answer was never acknowledged", func() bool { return r.c.m.gateways[0].queued() == 0 })
	r.waitGateway(t, "the caller never forgot its call", func(g *gateway) bool {
		return len(g.claimed) == 0 && len(g.parked) == 0 && len(g.pending) == 0
	})
}

// ranOnce checks the callee's echo ran once.
func (r *haltRig) ranOnce(t *testing.T) {
	t.Helper()
	if got := r.c.seen(); len(got) != 1 {
		t.Fatalf("the callee ran the call %d times, want once: %q", len(got), got)
	}
}

// TestHaltAfterTheAnswerWasTakenCallsOnce: a halt stops the proxy handling
// after it took the peer's answer; the pump discards what it returns and
// drops its after-journal hook. The answer is parked, and the handling
// after Unhalt takes it under the same call id: the callee runs the call
// once, the caller's conversation gets the answer once, the answer is
// acknowledged and the call forgotten. Without a store the hook waits
// for the handler's outputs to be processed instead, so the same holds.
func TestHaltAfterTheAnswerWasTakenCallsOnce(t *testing.T) {
	forBothNamings(t, func(t *testing.T, journaled bool) {
		r := newHaltRigWith(t, proxyTookAnswer, false, journaled)
		lt := r.send(t)
		r.halt(t)
		close(r.release) // the handler returns the answer to a halted handling
		r.waitParked(t, lt)
		if n := r.answered(); n != 0 {
			t.Fatalf("the halted handling's answer reached the conversation (%d)", n)
		}
		r.unhaltAnsweredOnce(t)
	})
}

// TestHaltWhileTheAnswerIsHandedOverCallsOnce: a halt cancels the proxy
// handling's wait and the answer is handed over before the handler
// stopped waiting (it is in the call's channel when the handler looks):
// it is parked, not dropped with a cancel, and the handling after Unhalt
// takes it without calling the peer again.
func TestHaltWhileTheAnswerIsHandedOverCallsOnce(t *testing.T) {
	forBothNamings(t, func(t *testing.T, journaled bool) {
		r := newHaltRigWith(t, proxyStopping, true, journaled)
		lt := r.haltDuringTheWait(t)
		close(r.hold) // the callee answers
		r.waitGateway(t, "the answer was never handed over", func(g *gateway) bool { return g.pending[lt] == nil })
		close(r.release)
		r.waitParked(t, lt)
		r.unhaltAnsweredOnce(t)
	})
}

// TestHaltBeforeTheAnswerCallsOnce: a halt stops the proxy handling's
// wait before the peer answered. The call is held open, not cancelled: the
// answer that comes while the caller is halted is parked, and the handling
// after Unhalt takes it under the same call id, so the callee runs the
// call once (a cancel and a new call ran it twice, the first having
// finished before the cancel came). An organism without a data directory,
// whose calls have random link threads, finds the held call by its thread
// and payload digest.
func TestHaltBeforeTheAnswerCallsOnce(t *testing.T) {
	forBothNamings(t, func(t *testing.T, journaled bool) {
		r := newHaltRigWith(t, proxyStopping, true, journaled)
		lt := r.haltWhileWaiting(t)
		close(r.hold) // the callee answers while the caller is halted
		r.waitParked(t, lt)
		r.unhaltAnsweredOnce(t)
	})
}

// TestUnhaltBeforeTheAnswerWaitsOnTheSameCall: the caller is unhalted
// before the peer answers a call whose wait a halt stopped: the handling
// after Unhalt waits on the call held open, under the same id, and gets
// its answer when it comes.
func TestUnhaltBeforeTheAnswerWaitsOnTheSameCall(t *testing.T) {
	forBothNamings(t, func(t *testing.T, journaled bool) {
		r := newHaltRigWith(t, proxyStopping, true, journaled)
		lt := r.haltWhileWaiting(t)
		r.p.Unhalt()
		r.waitGateway(t, "the handling after Unhalt never waited on the held call", func(g *gateway) bool {
			return g.pending[lt] != nil && g.parked[lt] == nil
		})
		close(r.hold)
		waitUntil(t, "the conversation was never answered", func() bool { return r.answered() > 0 })
		r.settled(t)
		if n := r.answered(); n != 1 {
			t.Fatalf("the conversation was answered %d times, want once", n)
		}
		r.ranOnce(t)
	})
}

// forBothNamings runs test with a journaled caller (calls named by their
// message) and with one without a store (named by their digest).
func forBothNamings(t *testing.T, test func(t *testing.T, journaled bool)) {
	t.Run("journaled", func(t *testing.T) { test(t, true) })
	t.Run("without a store", func(t *testing.T) { test(t, false) })
}

// TestHeldCallRefusedMeanwhile: the peer refuses a call held open for the
// next handling of its message (a nack while the caller is halted): the
// handling after Unhalt is handed the refusal, which answers the
// conversation, without calling the peer again.
func TestHeldCallRefusedMeanwhile(t *testing.T) {
	r := newHaltRig(t, proxyStopping, true)
	lt := r.haltWhileWaiting(t)
	r.g.refused(lt, "refused while the caller was halted", "")
	r.p.Unhalt()
	waitUntil(t, "the refusal never answered the conversation", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.huhs) > 0
	})
	r.mu.Lock()
	huhs := r.huhs
	r.mu.Unlock()
	// The callee still holds the call: only the refusal can end the wait
	// before call_timeout (the pump's <huh> names no internal error).
	if len(huhs) != 1 {
		t.Fatalf("the conversation was answered %q, want the peer's refusal once", huhs)
	}
	if n := r.answered(); n != 0 {
		t.Fatalf("the refused call was answered %d times", n)
	}
	r.forgotten(t) // the callee still holds the call: its outbox is empty
	r.ranOnce(t)
}

// TestHeldCallCancelledWhenTheThreadEnds: the conversation whose call a
// halt held open is killed: the call is cancelled at the peer (its
// conversation there ends) and forgotten here, and nothing answers the
// killed conversation after Unhalt.
func TestHeldCallCancelledWhenTheThreadEnds(t *testing.T) {
	r := newHaltRig(t, proxyStopping, true)
	lt := r.haltWhileWaiting(t)
	r.mu.Lock()
	thread := r.thread
	r.mu.Unlock()
	if _, err := r.p.Kill(thread); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the held call was never cancelled at the peer", func() bool {
		return !r.c.m.serving(derivedThread(r.c.m.secret, "a", lt))
	})
	close(r.hold) // the callee's killed handling returns
	// The peer's end of the cancelled call comes to a call nobody makes
	// any more: soon after a start it is kept as an orphan (keepOrphan),
	// as for any cancelled call, so only the gateway's memory is checked.
	r.forgotten(t)
	r.p.Unhalt()
	if n := r.answered(); n != 0 {
		t.Fatalf("the killed conversation was answered %d times", n)
	}
	r.ranOnce(t)
}

// TestParkedAnswerAcknowledgedWhenTheThreadEnds: the conversation of a
// halted handling whose answer is parked is killed: no handling will take
// the answer, so it is acknowledged (the peer deletes it) and the call
// forgotten.
func TestParkedAnswerAcknowledgedWhenTheThreadEnds(t *testing.T) {
	r := newHaltRig(t, proxyTookAnswer, false)
	lt := r.send(t)
	r.halt(t)
	close(r.release)
	r.waitParked(t, lt)
	r.mu.Lock()
	thread := r.thread
	r.mu.Unlock()
	if _, err := r.p.Kill(thread); err != nil {
		t.Fatal(err)
	}
	r.settled(t)
	r.p.Unhalt()
	if n := r.answered(); n != 0 {
		t.Fatalf("the killed conversation was answered %d times", n)
	}
	r.ranOnce(t)
}

// TestParkedAnswersBounded: past maxParked, the answer of a halted
// handling is not kept: it is acknowledged, its call forgotten, and the
// message's next handling calls anew (under the next id).
func TestParkedAnswersBounded(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	g := a.m.gateways[0]
	g.mu.Lock()
	for i := range maxParked {
		g.parked[fmt.Sprint("full-", i)] = &parkedAnswer{}
	}
	g.claimed["over"] = true
	g.mu.Unlock()
	acked := false
	o := opened{lt: "over", key: callKey("echo", 7), n: 0}
	g.park(context.Background(), o, stage.NewThreadID(), &envelope{}, func() { acked = true })
	if !acked {
		t.Fatal("an answer past the bound was not acknowledged")
	}
	waitUntil(t, "the call of an answer past the bound was not forgotten", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.claimed["over"]
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.parked["over"] != nil || len(g.parked) != maxParked {
		t.Fatalf("%d answers parked, want %d (the one past the bound dropped)", len(g.parked), maxParked)
	}
	if n := g.retried[o.key]; n != 1 {
		t.Fatalf("the next handling calls with attempt %d, want 1 (anew)", n)
	}
}

// unhaltAnsweredOnce unhalts the caller and checks that the handling after
// it answers the conversation once, the callee having run the call once,
// and that the answer is acknowledged and the call forgotten (settled).
func (r *haltRig) unhaltAnsweredOnce(t *testing.T) {
	t.Helper()
	r.p.Unhalt()
	waitUntil(t, "the conversation was never answered", func() bool { return r.answered() > 0 })
	r.ranOnce(t)
	r.settled(t)
	if n := r.answered(); n != 1 {
		t.Fatalf("the conversation was answered %d times, want once", n)
	}
	r.ranOnce(t)
}
