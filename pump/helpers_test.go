package pump_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// waitTimeout bounds every wait on a completion signal. It only fires when a
// test is failing: passing tests never wait for it.
const waitTimeout = 10 * time.Second

// client is the external sender name the tests use.
const client = "client"

// startPump builds, registers and starts a pump; it is shut down (drained) when
// the test ends. Handlers that block must also watch t.Context(), which is
// cancelled before cleanups run, so the drain never waits on a forgotten gate.
func startPump(t *testing.T, opts pump.Options, ls ...pump.Listener) *pump.Pump {
	t.Helper()
	p := newPump(t, opts, ls...)
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return p
}

// newPump builds a pump and registers ls without starting it.
func newPump(t *testing.T, opts pump.Options, ls ...pump.Listener) *pump.Pump {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := pump.New(opts)
	if err != nil {
		t.Fatalf("pump.New: %v", err)
	}
	for _, l := range ls {
		if err := p.Register(l); err != nil {
			t.Fatalf("Register %s: %v", l.Name, err)
		}
	}
	return p
}

// payloadType returns the payload contract of T or fails the test.
func payloadType[T any](t testing.TB) *xmlpipe.PayloadType {
	t.Helper()
	pt, err := xmlpipe.PayloadTypeOf[T]()
	if err != nil {
		t.Fatalf("PayloadTypeOf: %v", err)
	}
	return pt
}

// listenerOf builds a listener over payload type T.
func listenerOf[T any](t testing.TB, name string, h func(context.Context, *T, xmlpipe.Metadata) (xmlpipe.Response, error)) pump.Listener {
	t.Helper()
	return pump.Listener{Name: name, Payload: payloadType[T](t), Handler: xmlpipe.Typed(h)}
}

// errorAware adds xmlpipe.ErrorHandler to a handler.
type errorAware struct {
	xmlpipe.Handler
	onError func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error)
}

// HandleError calls onError.
func (e errorAware) HandleError(ctx context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	return e.onError(ctx, de, md)
}

// withErrorHandler makes l receive its <huh> and SystemError messages through fn.
func withErrorHandler(l pump.Listener, fn func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error)) pump.Listener {
	l.Handler = errorAware{Handler: l.Handler, onError: fn}
	return l
}

// agent marks l as an agent with the given peers.
func agent(l pump.Listener, peers ...string) pump.Listener {
	l.Agent = true
	l.Peers = peers
	return l
}

// envelope builds an external envelope around an encoded payload (which must
// declare its own namespace, xmlns="" for none). to may be empty.
func envelope(from, to, thread, payload string) []byte {
	var b strings.Builder
	b.WriteString(`<message xmlns="` + stage.EnvelopeNS + `"><meta><from>` + from + `</from>`)
	if to != "" {
		b.WriteString(`<to>` + to + `</to>`)
	}
	b.WriteString(`<thread>` + thread + `</thread></meta>` + payload + `</message>`)
	return []byte(b.String())
}

// recorder is an Outlet (and subscriber) that keeps every event and lets a
// test wait for the one it expects.
type recorder struct {
	mu     sync.Mutex
	events []pump.Event
	notify chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{})} }

// Deliver records e and wakes waiters.
func (r *recorder) Deliver(e pump.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
}

// snapshot returns the events so far.
func (r *recorder) snapshot() []pump.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pump.Event(nil), r.events...)
}

// waitFor blocks until an event matching match has been recorded and returns
// the first one.
func (r *recorder) waitFor(t testing.TB, what string, match func(pump.Event) bool) pump.Event {
	t.Helper()
	var found pump.Event
	r.waitUntil(t, what, func(es []pump.Event) bool {
		for _, e := range es {
			if match(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// waitN blocks until n recorded events match.
func (r *recorder) waitN(t testing.TB, what string, n int, match func(pump.Event) bool) {
	t.Helper()
	r.waitUntil(t, what, func(es []pump.Event) bool {
		seen := 0
		for _, e := range es {
			if match(e) {
				seen++
			}
		}
		return seen >= n
	})
}

// waitUntil blocks until cond holds for the events recorded so far; cond is
// re-evaluated after every new event.
func (r *recorder) waitUntil(t testing.TB, what string, cond func([]pump.Event) bool) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		ok := cond(r.events)
		ch := r.notify
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s; events: %s", what, describe(r.snapshot()))
		}
	}
}

// kind matches events of kind k.
func kind(k pump.EventKind) func(pump.Event) bool {
	return func(e pump.Event) bool { return e.Kind == k }
}

// count returns how many recorded events match.
func (r *recorder) count(match func(pump.Event) bool) int {
	n := 0
	for _, e := range r.snapshot() {
		if match(e) {
			n++
		}
	}
	return n
}

func describe(es []pump.Event) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("\n  " + string(e.Kind) + " from=" + e.From + " to=" + e.To + " listener=" + e.Listener +
			" payload=" + e.PayloadName)
		if e.Error != "" {
			b.WriteString(" error=" + e.Error)
		}
	}
	return b.String()
}

// call is one handler invocation seen by a probe.
type call struct {
	Listener string
	MD       xmlpipe.Metadata
	Payload  any
}

// probe records handler invocations in order and signals each one.
type probe struct {
	mu    sync.Mutex
	calls []call
	ch    chan call
}

func newProbe() *probe { return &probe{ch: make(chan call, 1024)} }

func (p *probe) record(listener string, payload any, md xmlpipe.Metadata) {
	c := call{Listener: listener, MD: md, Payload: payload}
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	p.ch <- c
}

func (p *probe) all() []call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]call(nil), p.calls...)
}

// next waits for the next invocation.
func (p *probe) next(t testing.TB) call {
	t.Helper()
	select {
	case c := <-p.ch:
		return c
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a handler call")
		return call{}
	}
}

// sink is a listener that records its calls and ends the chain.
func sink[T any](t testing.TB, name string, pr *probe) pump.Listener {
	return listenerOf(t, name, func(_ context.Context, p *T, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record(name, p, md)
		return nil, nil
	})
}

// gate blocks handlers until it is opened (or the test ends).
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// wait blocks until the gate opens; it reports false if ctx ended first.
func (g *gate) wait(ctx context.Context) bool {
	select {
	case <-g.ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitCtx is a context bounded by waitTimeout and the test's life.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// injectErr injects raw and returns the ingress result.
func injectErr(t *testing.T, p *pump.Pump, raw []byte, out pump.Outlet) (string, error) {
	t.Helper()
	return p.InjectWait(waitCtx(t), raw, out)
}

// mustSend sends payload from an external sender and fails on an ingress error.
func mustSend(t *testing.T, p *pump.Pump, from, to string, payload any, out pump.Outlet) string {
	t.Helper()
	thread, err := p.Send(waitCtx(t), from, to, payload, out)
	if err != nil {
		t.Fatalf("Send(%s → %s): %v", from, to, err)
	}
	return thread
}

// failureOf returns the *failure.Failure in err, or nil.
func failureOf(err error) *failure.Failure {
	var f *failure.Failure
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// updateMax raises *max to v if v is larger.
func updateMax(max interface {
	Load() int64
	CompareAndSwap(old, new int64) bool
}, v int64) {
	for {
		cur := max.Load()
		if v <= cur || max.CompareAndSwap(cur, v) {
			return
		}
	}
}

// pinnedRelay starts a pump with a relay listener and a target sink that
// records into the returned probe, and sends the relay a <Slow> on a
// conversation of its own: the relay's handler holds it — the conversation
// pins the routing table in force — until the returned gate opens, then
// sends target a <Pong>. rec (nil: none) gets the conversation's events.
func pinnedRelay(t *testing.T, rec pump.Outlet) (*pump.Pump, *probe, *gate) {
	t.Helper()
	pr, g := newProbe(), newGate()
	running := make(chan struct{}, 1)
	relay := listenerOf(t, "relay", func(ctx context.Context, s *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- struct{}{}
		g.wait(ctx)
		return xmlpipe.Send("target", &Pong{Text: s.Text}), nil
	})
	p := startPump(t, pump.Options{}, relay, sink[Pong](t, "target", pr))
	t.Cleanup(g.open) // before the drain, also when the test fails
	mustSend(t, p, client, "relay", &Slow{Text: "pinned"}, rec)
	<-running
	return p, pr, g
}
