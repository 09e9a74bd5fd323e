package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// blocker is a listener of T whose handlers block until the gate opens (or
// the test ends), answering afterwards; entered is signalled on entry.
func blocker[T any](t *testing.T, name string, g *gate, entered chan<- string) pump.Listener {
	return listenerOf(t, name, func(_ context.Context, _ *T, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered <- name
		g.wait(t.Context())
		return nil, nil
	})
}

// echo is a listener of Ping answering at once.
func echo(t *testing.T, name string) pump.Listener {
	return listenerOf(t, name, func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Ping{Text: name + ": " + in.Text}), nil
	})
}

// busyOf returns the *pump.BusyError in err, or fails.
func busyOf(t *testing.T, err error, reason string) *pump.BusyError {
	t.Helper()
	var b *pump.BusyError
	if !errors.Is(err, pump.ErrBusy) || !errors.As(err, &b) {
		t.Fatalf("err = %v, want ErrBusy", err)
	}
	if !strings.Contains(b.Reason, reason) || b.RetryAfter < time.Second {
		t.Fatalf("busy %q retry after %s, want a reason with %q and a retry hint", b.Reason, b.RetryAfter, reason)
	}
	return b
}

// pingTo builds an external Ping envelope from client to listener to.
func pingTo(from, to, text string) []byte {
	return envelope(from, to, stage.NewThreadID(), `<Ping xmlns=""><Text>`+text+`</Text></Ping>`)
}

// TestAdmissionGlobalBudget: once the in-flight budget is used up, Inject
// waits at most AdmitWait (or its context's deadline, when sooner) and then
// fails with a BusyError; a waiting Inject proceeds once work drains.
func TestAdmissionGlobalBudget(t *testing.T) {
	g := newGate()
	entered := make(chan string, 16)
	// Eight broadcast members of one budget of 8 (a listener's share is 1):
	// one message fills it.
	var ls []pump.Listener
	for i := range 8 {
		l := blocker[News](t, fmt.Sprint("member", i), g, entered)
		l.Broadcast = true
		ls = append(ls, l)
	}
	ls = append(ls, echo(t, "free"))
	p := startPump(t, pump.Options{MaxInFlight: 8, AdmitWait: 100 * time.Millisecond}, ls...)
	if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<News xmlns=""><Headline>all</Headline></News>`), nil); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		<-entered
	}
	start := time.Now()
	_, err := p.InjectWait(waitCtx(t), pingTo(client, "free", "1"), nil)
	busyOf(t, err, "in-flight budget full")
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait ended by AdmitWait reports the caller's deadline: %v", err)
	}
	if waited := time.Since(start); waited > waitTimeout/2 {
		t.Errorf("Inject answered busy after %s; AdmitWait is 100ms", waited)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err = p.Inject(ctx, pingTo(client, "free", "2"), nil)
	busyOf(t, err, "in-flight budget full")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait ended by the caller's deadline: %v, want it to say so", err)
	}
	waiting := make(chan error, 1)
	out := newRecorder()
	go func() {
		// AdmitWait is short: retry while busy until the work drained.
		for {
			err := p.Inject(waitCtx(t), pingTo(client, "free", "3"), out)
			if !errors.Is(err, pump.ErrBusy) {
				waiting <- err
				return
			}
		}
	}()
	g.open()
	select {
	case err := <-waiting:
		if err != nil {
			t.Fatalf("Inject after the work drained = %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Inject still refused after the work drained")
	}
	out.waitFor(t, "the answer", kind(pump.EventReply))
}

// TestAdmissionListenerShare: a listener holding its share of the budget
// (MaxInFlight/8 deliveries queued or running) refuses new external
// messages at once with ErrBusy — nothing of them is journaled — while other
// listeners answer; internal work beyond the share still enters, and is not
// counted against the others.
func TestAdmissionListenerShare(t *testing.T) {
	g := newGate()
	t.Cleanup(g.open)
	entered := make(chan string, 64)
	slow := blocker[Job](t, "slow", g, entered)
	slow.Workers = 1
	// fan answers a Pong with 40 Jobs for slow, in one raw reply.
	fan := listenerOf(t, "fan", func(_ context.Context, in *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		var b strings.Builder
		for i := range 40 {
			fmt.Fprintf(&b, "<Job><Label>fan%d</Label></Job>", i)
		}
		return xmlpipe.Raw([]byte(b.String())), nil
	})
	j := newMarkJournal()
	fan.MaxMessagesPerTurn = 64 // the fan-out is one turn of 40
	p := startPump(t, pump.Options{MaxInFlight: 16, AdmitWait: 50 * time.Millisecond, Journal: j}, slow, fan, echo(t, "other"))
	jobTo := func(label string) []byte {
		return envelope(client, "slow", stage.NewThreadID(), `<Job xmlns=""><Label>`+label+`</Label></Job>`)
	}
	for _, l := range []string{"1", "2"} { // share 2: one running, one queued
		if _, err := injectErr(t, p, jobTo(l), nil); err != nil {
			t.Fatalf("inject %s: %v", l, err)
		}
	}
	<-entered
	before := j.kinds()[pump.RecordMessage]
	start := time.Now()
	_, err := injectErr(t, p, jobTo("3"), nil)
	busyOf(t, err, "listener slow busy")
	if waited := time.Since(start); waited > waitTimeout/2 {
		t.Errorf("busy answered after %s", waited)
	}
	if after := j.kinds()[pump.RecordMessage]; after != before {
		t.Errorf("the refused message was journaled (%d message records, were %d)", after, before)
	}
	out := newRecorder()
	if _, err := injectErr(t, p, pingTo(client, "other", "hi"), out); err != nil {
		t.Fatalf("inject to another listener: %v", err)
	}
	out.waitFor(t, "the other listener's answer", kind(pump.EventReply))

	// Internal work piles up at slow far beyond its share (and the whole
	// budget of 16): it still enters, and other listeners are still admitted.
	fanOut := newRecorder()
	mustSend(t, p, client, "fan", &Pong{Text: "go"}, fanOut)
	poll(t, "the fan-out queued at slow", func() bool { return queueDepth(p, "slow") == 41 })
	if got := p.InFlight(); got < 40 {
		t.Fatalf("InFlight = %d, want the fan-out counted", got)
	}
	for i := range 3 {
		out := newRecorder()
		if _, err := injectErr(t, p, pingTo(client, "other", fmt.Sprint(i)), out); err != nil {
			t.Fatalf("inject to another listener with slow's backlog over the budget: %v", err)
		}
		out.waitFor(t, "the other listener's answer", kind(pump.EventReply))
	}
	g.open()
	fanOut.waitFor(t, "the fan-out handled", kind(pump.EventComplete))
	if _, err := injectErr(t, p, jobTo("4"), nil); err != nil {
		t.Fatalf("inject to slow once it drained: %v", err)
	}
}

// TestAdmissionPerUser: one authenticated user may have at most
// MaxInFlight/4 external messages in flight; beyond, its injects wait and
// fail with ErrBusy, while another user and callers without a principal
// are admitted.
func TestAdmissionPerUser(t *testing.T) {
	g := newGate()
	t.Cleanup(g.open)
	entered := make(chan string, 8)
	p := startPump(t, pump.Options{MaxInFlight: 8, AdmitWait: 50 * time.Millisecond},
		blocker[Job](t, "s1", g, entered), blocker[Pong](t, "s2", g, entered), echo(t, "free"))
	alice := pump.Principal{From: "api:alice", User: "alice"}
	if _, err := p.InjectAs(waitCtx(t), envelope(alice.From, "s1", stage.NewThreadID(), `<Job xmlns=""><Label>a</Label></Job>`), nil, alice); err != nil {
		t.Fatal(err)
	}
	// Another of alice's session identities shares her account.
	ws := pump.Principal{From: "websocket:alice", User: "alice"}
	if _, err := p.InjectAs(waitCtx(t), envelope(ws.From, "s2", stage.NewThreadID(), `<Pong xmlns=""><Text>b</Text></Pong>`), nil, ws); err != nil {
		t.Fatal(err)
	}
	<-entered
	<-entered
	_, err := p.InjectAs(waitCtx(t), pingTo(alice.From, "free", "c"), nil, alice)
	busyOf(t, err, "user's in-flight share full")

	bob := pump.Principal{From: "api:bob", User: "bob"}
	out := newRecorder()
	if _, err := p.InjectAs(waitCtx(t), pingTo(bob.From, "free", "d"), out, bob); err != nil {
		t.Fatalf("bob's inject: %v", err)
	}
	out.waitFor(t, "bob's answer", kind(pump.EventReply))
	anon := newRecorder()
	if _, err := injectErr(t, p, pingTo(client, "free", "e"), anon); err != nil {
		t.Fatalf("inject without a principal: %v", err)
	}
	anon.waitFor(t, "the answer", kind(pump.EventReply))
	g.open()
	poll(t, "alice's work to drain", func() bool { return p.InFlight() == 0 })
	if _, err := p.InjectAs(waitCtx(t), pingTo(alice.From, "free", "f"), nil, alice); err != nil {
		t.Fatalf("alice's inject once her work drained: %v", err)
	}
}

// TestAdmissionStalledListeners: with several listeners stalled — paused,
// or blocked in their handlers — and flooded until they refuse, an inject
// to another listener still succeeds at once and one to a stalled listener
// is refused with ErrBusy within a bounded time, never hangs.
func TestAdmissionStalledListeners(t *testing.T) {
	g := newGate()
	t.Cleanup(g.open)
	entered := make(chan string, 256)
	blocked := blocker[Job](t, "blocked", g, entered)
	blocked.Workers = 2
	p := startPump(t, pump.Options{MaxInFlight: 64, AdmitWait: 100 * time.Millisecond},
		blocked, sink[Pong](t, "paused1", newProbe()), sink[News](t, "paused2", newProbe()), echo(t, "free"))
	for _, name := range []string{"paused1", "paused2"} {
		if err := p.Pause(name); err != nil {
			t.Fatal(err)
		}
	}
	payloads := map[string]string{"blocked": `<Job xmlns=""><Label>x</Label></Job>`,
		"paused1": `<Pong xmlns=""><Text>x</Text></Pong>`, "paused2": `<News xmlns=""><Headline>x</Headline></News>`}
	for name, payload := range payloads {
		accepted := 0
		for {
			_, err := injectErr(t, p, envelope(client, name, stage.NewThreadID(), payload), nil)
			if errors.Is(err, pump.ErrBusy) {
				break
			}
			if err != nil {
				t.Fatalf("flooding %s: %v", name, err)
			}
			if accepted++; accepted > 64 {
				t.Fatalf("%s accepted %d messages, more than the whole budget", name, accepted)
			}
		}
		if accepted != 8 {
			t.Errorf("%s took %d messages before refusing, want its share 8", name, accepted)
		}
	}
	for name, payload := range payloads {
		start := time.Now()
		_, err := injectErr(t, p, envelope(client, name, stage.NewThreadID(), payload), nil)
		busyOf(t, err, "listener "+name+" busy")
		if waited := time.Since(start); waited > waitTimeout/2 {
			t.Errorf("%s: refused after %s", name, waited)
		}
	}
	out := newRecorder()
	if _, err := injectErr(t, p, pingTo(client, "free", "still here"), out); err != nil {
		t.Fatalf("inject to a free listener with three stalled: %v", err)
	}
	out.waitFor(t, "the free listener's answer", kind(pump.EventReply))
}
