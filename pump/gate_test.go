package pump_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// testGate is a DeliveryGate deciding by the payload text of messages to
// "tool" (and of outside messages at the "door"): "deny" refuses, "hold"
// holds (id "h-" + the target), anything else is delivered. It keeps what
// it was asked and what was dropped.
type testGate struct {
	mu      sync.Mutex
	seen    []pump.GateMessage
	dropped map[string]error
}

func (g *testGate) Check(m *pump.GateMessage) pump.GateDecision {
	g.mu.Lock()
	g.seen = append(g.seen, *m)
	g.mu.Unlock()
	if m.Target != "tool" && !strings.Contains(string(m.Payload), "door") {
		return pump.GateDecision{}
	}
	switch {
	case strings.Contains(string(m.Payload), "deny"):
		return pump.GateDecision{Verdict: pump.GateRefuse,
			Refusal: stage.NewRefusal("no denials here", "ask nicely", stage.SeverityHigh, "rule-1")}
	case strings.Contains(string(m.Payload), "hold"):
		return pump.GateDecision{Verdict: pump.GateHold, HoldID: "h-" + m.Target}
	}
	return pump.GateDecision{}
}

func (g *testGate) Dropped(id string, cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dropped == nil {
		g.dropped = map[string]error{}
	}
	g.dropped[id] = cause
}

func (g *testGate) droppedCause(id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dropped[id]
}

// gateOrganism is an agent "asker" that sends its Ping text to "tool" and
// records what its error handler receives, and the tool that answers Pong.
type gateOrganism struct {
	p       *pump.Pump
	gate    *testGate
	tool    *probe
	errs    chan *xmlpipe.DeliveryError
	journal *markJournal
	events  *recorder
}

func newGateOrganism(t *testing.T) *gateOrganism {
	t.Helper()
	g := &gateOrganism{gate: &testGate{}, tool: newProbe(), errs: make(chan *xmlpipe.DeliveryError, 16),
		journal: newMarkJournal(), events: newRecorder()}
	asker := withErrorHandler(agent(listenerOf(t, "asker", func(_ context.Context, p *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("tool", &Pong{Text: p.Text}), nil
	}), "tool"), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		g.errs <- de
		return nil, nil
	})
	tool := listenerOf(t, "tool", func(_ context.Context, p *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		g.tool.record("tool", p, md)
		return nil, nil
	})
	g.p = startPump(t, pump.Options{Journal: g.journal}, asker, tool)
	g.p.Subscribe(g.events)
	g.p.SetGate(g.gate)
	return g
}

// pongDelivered reports whether the asker's Pong holding text was journaled
// and marked delivered.
func (g *gateOrganism) pongDelivered(text string) (journaled, delivered bool) {
	j := g.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	for env, seq := range j.messages {
		if strings.Contains(env, "<Pong") && strings.Contains(env, ">"+text+"<") {
			return true, j.delivered[seq]
		}
	}
	return false, false
}

// waitPongDelivered waits until the asker's Pong holding text is marked
// delivered. The mark may trail the conversation's completion: a refusal
// (or the tool's turn) releases the Pong's last reference only after
// handing its answer on, and the asker can finish the conversation first.
func (g *gateOrganism) waitPongDelivered(t *testing.T, text string) {
	t.Helper()
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(time.Millisecond) {
		journaled, delivered := g.pongDelivered(text)
		if journaled && delivered {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pong %q journaled %v, marked delivered %v; want both", text, journaled, delivered)
		}
	}
}

// ask sends text to the asker from outside and returns the conversation.
func (g *gateOrganism) ask(t *testing.T, text string, out pump.Outlet) string {
	t.Helper()
	thread, err := g.p.Send(t.Context(), client, "asker", &Ping{Text: text}, out)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return thread
}

func (g *gateOrganism) refusal(t *testing.T) *xmlpipe.Refusal {
	t.Helper()
	select {
	case de := <-g.errs:
		if de.Refusal == nil {
			t.Fatalf("error handler got %+v, want a refusal", de)
		}
		return de.Refusal
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for the refusal")
		return nil
	}
}

func TestGateDeniesAnAgentsCallWithAStructuredRefusal(t *testing.T) {
	g := newGateOrganism(t)
	conv := g.ask(t, "please deny", nil)
	r := g.refusal(t)
	if r.Status != "refused" || r.Reason != "no denials here" || r.Suggestion != "ask nicely" ||
		r.Severity != "high" || len(r.ViolatedRules) != 1 || r.ViolatedRules[0] != "rule-1" {
		t.Fatalf("refusal %+v", r)
	}
	g.events.waitFor(t, "the refusal event", func(e pump.Event) bool {
		return e.Kind == pump.EventRefusal && e.To == "asker" && e.Listener == "tool" && e.Conversation == conv
	})
	g.events.waitFor(t, "completion", func(e pump.Event) bool { return e.Kind == pump.EventComplete && e.Conversation == conv })
	if n := len(g.tool.all()); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	g.waitPongDelivered(t, "please deny") // the refused message
	if n := g.journal.kinds()[pump.RecordRefusal]; n != 1 {
		t.Fatalf("%d refusal records, want 1", n)
	}
	g.gate.mu.Lock()
	defer g.gate.mu.Unlock()
	var call *pump.GateMessage
	for i := range g.gate.seen {
		if g.gate.seen[i].Target == "tool" {
			call = &g.gate.seen[i]
		}
	}
	if call == nil || !call.FromAgent || call.FromOutside || call.From != "asker" || call.TargetAgent ||
		call.Seq == 0 || call.PayloadName != "Pong" || !strings.Contains(string(call.Envelope), "please deny") {
		t.Fatalf("gate saw %+v", call)
	}
}

func TestGateRefusesAnOutsideSenderInItsReply(t *testing.T) {
	g := newGateOrganism(t)
	out := newRecorder()
	conv := g.ask(t, "deny me at the door", out)
	e := out.waitFor(t, "the refusal reply", kind(pump.EventReply))
	r, ok := e.Payload.(*xmlpipe.Refusal)
	if !ok || e.From != "core" || e.To != client || r.ViolatedRules[0] != "rule-1" ||
		!strings.Contains(string(e.Envelope), `<refusal xmlns="https://xml-pipeline.org/ns/core/v1">`) {
		t.Fatalf("reply %+v (payload %T)", e, e.Payload)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if g.events.count(func(e pump.Event) bool { return e.Kind == pump.EventMessage && e.Conversation == conv }) != 0 {
		t.Fatal("a refused message was published as delivered")
	}
}

func TestGateHoldsUntilReleased(t *testing.T) {
	g := newGateOrganism(t)
	conv := g.ask(t, "hold on", nil)
	waitHeld(t, g.p, "h-tool")
	held := g.p.Held()
	if len(held) != 1 || held[0].Conversation != conv || held[0].From != "asker" || held[0].Listener != "tool" ||
		held[0].PayloadName != "Pong" {
		t.Fatalf("Held() = %+v", held)
	}
	if !g.p.Running(conv) {
		t.Fatal("a conversation with a held message is not running")
	}
	// The Pong is held while the asker's turn that sent it still
	// finishes: in flight drains to 0 only if the held message is not
	// counted.
	for deadline := time.Now().Add(waitTimeout); g.p.InFlight() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a held message counts as in flight: %d", g.p.InFlight())
		}
	}
	if journaled, delivered := g.pongDelivered("hold on"); !journaled || delivered {
		t.Fatalf("held message journaled %v, marked delivered %v; want journaled, not delivered", journaled, delivered)
	}
	if len(g.tool.all()) != 0 {
		t.Fatal("the tool ran before the release")
	}
	if err := g.p.Release("h-tool"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	c := g.tool.next(t)
	if c.Payload.(*Pong).Text != "hold on" || c.MD.From != "asker" {
		t.Fatalf("tool got %+v", c)
	}
	g.events.waitFor(t, "completion", func(e pump.Event) bool { return e.Kind == pump.EventComplete && e.Conversation == conv })
	g.waitPongDelivered(t, "hold on") // the released message
	if err := g.p.Release("h-tool"); !errors.Is(err, pump.ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
	if err := g.p.RefuseHeld("h-tool", nil); !errors.Is(err, pump.ErrNotHeld) {
		t.Fatalf("RefuseHeld after Release: %v, want ErrNotHeld", err)
	}
}

func TestGateHeldMessageRefusedLater(t *testing.T) {
	g := newGateOrganism(t)
	conv := g.ask(t, "hold then no", nil)
	waitHeld(t, g.p, "h-tool")
	if err := g.p.RefuseHeld("h-tool", stage.NewRefusal("denied by alice: not now", "", stage.SeverityMedium)); err != nil {
		t.Fatalf("RefuseHeld: %v", err)
	}
	r := g.refusal(t)
	if r.Reason != "denied by alice: not now" || len(r.ViolatedRules) != 0 {
		t.Fatalf("refusal %+v", r)
	}
	g.events.waitFor(t, "completion", func(e pump.Event) bool { return e.Kind == pump.EventComplete && e.Conversation == conv })
	if len(g.tool.all()) != 0 {
		t.Fatal("the tool ran")
	}
	g.waitPongDelivered(t, "hold then no") // the refused message
}

func TestGateKillDropsHeldMessages(t *testing.T) {
	g := newGateOrganism(t)
	conv := g.ask(t, "hold forever", nil)
	waitHeld(t, g.p, "h-tool")
	if _, err := g.p.Kill(conv); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	g.events.waitFor(t, "completion", func(e pump.Event) bool { return e.Kind == pump.EventComplete && e.Conversation == conv })
	if cause := g.gate.droppedCause("h-tool"); !errors.Is(cause, pump.ErrConversationKilled) {
		t.Fatalf("Dropped cause %v", cause)
	}
	if len(g.p.Held()) != 0 {
		t.Fatalf("still held: %+v", g.p.Held())
	}
	if err := g.p.Release("h-tool"); !errors.Is(err, pump.ErrNotHeld) {
		t.Fatalf("Release after kill: %v", err)
	}
}

func TestGateHeldMessageDoesNotHoldAShutdown(t *testing.T) {
	j := newMarkJournal()
	tool := listenerOf(t, "tool", func(_ context.Context, p *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		t.Error("the held message was handled")
		return nil, nil
	})
	p := newPump(t, pump.Options{Journal: j, ShutdownTimeout: 30 * time.Second}, tool)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	p.SetGate(&testGate{})
	if _, err := p.Send(t.Context(), client, "tool", &Pong{Text: "hold"}, nil); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, p, "h-tool")
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("a held message holds the graceful shutdown")
	}
	if journaled, delivered := j.deliveredText("hold"); !journaled || delivered {
		t.Fatalf("after shutdown: journaled %v delivered %v; want journaled and not delivered (recovery re-delivers it)",
			journaled, delivered)
	}
	if err := p.Release("h-tool"); !errors.Is(err, pump.ErrClosed) {
		t.Fatalf("Release after shutdown: %v, want ErrClosed", err)
	}
}

// waitHeld waits until the pump holds a message under id.
func waitHeld(t *testing.T, p *pump.Pump, id string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, h := range p.Held() {
			if h.ID == id {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no message held under %s", id)
}

// killingGate holds the first message it is asked about, but only once
// the test killed its conversation meanwhile: Check tells the test it is
// deciding (on deciding, with the conversation) and waits until Kill ended
// the conversation's threads (on ended) — Kill marked it killed by then,
// and waits for this decision to return. It records every target it is
// asked about and every drop.
type killingGate struct {
	deciding chan string
	ended    chan struct{}
	mu       sync.Mutex
	asked    []string
	dropped  map[string]error
}

func (g *killingGate) Check(m *pump.GateMessage) pump.GateDecision {
	g.mu.Lock()
	g.asked = append(g.asked, m.Target)
	first := len(g.asked) == 1
	g.mu.Unlock()
	if first {
		g.deciding <- m.Conversation
		<-g.ended
	}
	return pump.GateDecision{Verdict: pump.GateHold, HoldID: "h-" + m.Target}
}

func (g *killingGate) Dropped(id string, cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropped[id] = cause
}

// TestGateKillWhileTheGateDecides: Kill runs while the gate decides to hold
// a message — after the gate created what the hold stands for (an
// approval, say), before the pump keeps the hold. When Kill returns, the
// hold is dropped and the gate told (so the approval expires), and the gate
// is not asked about the conversation's other deliveries: nothing of it is
// held, nothing handled.
func TestGateKillWhileTheGateDecides(t *testing.T) {
	ran := make(chan string, 4)
	member := func(name string) pump.Listener {
		l := listenerOf(t, name, func(_ context.Context, in *News, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			ran <- name
			return nil, nil
		})
		l.Broadcast = true
		return l
	}
	p := startPump(t, pump.Options{}, member("n1"), member("n2"))
	g := &killingGate{deciding: make(chan string, 1), ended: make(chan struct{}), dropped: map[string]error{}}
	p.SetGate(g)
	events := newRecorder()
	p.Subscribe(events)
	convCh := make(chan string, 1)
	var once sync.Once
	p.Threads().OnEnd(func(ids []string) {
		select {
		case conv := <-convCh:
			if slices.Contains(ids, conv) {
				once.Do(func() { close(g.ended) })
			} else {
				convCh <- conv
			}
		default:
		}
	})
	// A broadcast: one message, two deliveries, each asked of the gate in
	// turn (the injection may run them on this goroutine: it goes aside).
	injected := make(chan error, 1)
	go func() {
		err := p.Inject(t.Context(), envelope(client, "", stage.NewThreadID(), `<News xmlns=""><Headline>x</Headline></News>`), nil)
		injected <- err
	}()
	var conv string
	select {
	case conv = <-g.deciding:
	case <-time.After(waitTimeout):
		t.Fatal("the gate was not asked")
	}
	convCh <- conv
	killed := make(chan error, 1)
	go func() {
		_, err := p.Kill(conv)
		killed <- err
	}()
	select {
	case err := <-killed:
		if err != nil {
			t.Fatalf("Kill: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Kill did not return")
	}
	// Kill returned: the hold the gate was deciding is dropped already.
	g.mu.Lock()
	asked, dropped := slices.Clone(g.asked), maps.Clone(g.dropped)
	g.mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("the gate was asked about %v; want only the delivery it was deciding when the kill came", asked)
	}
	if cause := dropped["h-"+asked[0]]; !errors.Is(cause, pump.ErrConversationKilled) || len(dropped) != 1 {
		t.Fatalf("dropped %v; want h-%s dropped for the kill", dropped, asked[0])
	}
	if held := p.Held(); len(held) != 0 {
		t.Fatalf("still held after the kill: %+v", held)
	}
	if err := <-injected; err != nil {
		t.Fatalf("Inject: %v", err)
	}
	events.waitFor(t, "completion", func(e pump.Event) bool { return e.Kind == pump.EventComplete && e.Conversation == conv })
	g.mu.Lock()
	asked = slices.Clone(g.asked)
	g.mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("the gate was asked about %v after the kill", asked)
	}
	select {
	case name := <-ran:
		t.Fatalf("%s handled a message of the killed conversation", name)
	default:
	}
}

// slowHoldGate holds every message under "h-" + its target, but for the
// first one it tells the test it is deciding (on deciding, with the
// conversation) and waits for proceed before it answers.
type slowHoldGate struct {
	deciding chan string
	proceed  chan struct{}
	once     sync.Once
}

func (g *slowHoldGate) Check(m *pump.GateMessage) pump.GateDecision {
	g.once.Do(func() {
		g.deciding <- m.Conversation
		<-g.proceed
	})
	return pump.GateDecision{Verdict: pump.GateHold, HoldID: "h-" + m.Target}
}

func (g *slowHoldGate) Dropped(string, error) {}

// TestGateReleaseWhileTheGateDecides: a human decides while the gate is
// still deciding to hold the message (its approval is visible, the hold
// not yet taken): Release answers ErrNotHeld, and after AwaitGate on the
// conversation the hold is there, and Release delivers it.
func TestGateReleaseWhileTheGateDecides(t *testing.T) {
	ran := make(chan string, 1)
	l := listenerOf(t, "n1", func(_ context.Context, in *News, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		ran <- in.Headline
		return nil, nil
	})
	p := startPump(t, pump.Options{}, l)
	g := &slowHoldGate{deciding: make(chan string, 1), proceed: make(chan struct{})}
	p.SetGate(g)
	go func() {
		_ = p.Inject(t.Context(), envelope(client, "n1", stage.NewThreadID(), `<News xmlns=""><Headline>x</Headline></News>`), nil)
	}()
	var conv string
	select {
	case conv = <-g.deciding:
	case <-time.After(waitTimeout):
		t.Fatal("the gate was not asked")
	}
	if err := p.Release("h-n1"); !errors.Is(err, pump.ErrNotHeld) {
		t.Fatalf("Release while the gate decides: %v, want ErrNotHeld", err)
	}
	released := make(chan error, 1)
	go func() {
		p.AwaitGate(conv)
		released <- p.Release("h-n1")
	}()
	select {
	case err := <-released:
		t.Fatalf("AwaitGate returned while the gate decided (Release: %v)", err)
	case <-time.After(20 * time.Millisecond): // not a wait for anything: gives a wrongly early return the time to show
	}
	close(g.proceed)
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("Release after AwaitGate: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("AwaitGate did not return after the gate decided")
	}
	select {
	case h := <-ran:
		if h != "x" {
			t.Fatalf("n1 got %q", h)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the released message was not handled")
	}
}
