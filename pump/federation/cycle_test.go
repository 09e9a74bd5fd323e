package federation

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Ping is what organism B exports in the cycle tests: its listener ping
// passes it on to A's pong.
type Ping struct {
	N int
}

// Pong is what organism A exports in the cycle tests: its listener pong
// passes it on to B's ping.
type Pong struct {
	N int
}

// cyclePair is two organisms whose listeners call each other through one
// gateway link over TLS: A's pong sends Ping to the import ping (B's
// listener), B's ping sends Pong to the import pong (A's listener), each
// adding 1 to N, until N reaches stop (0: never) — then each answers its
// caller, the answers unwinding the calls.
type cyclePair struct {
	a, b   *pump.Pump
	ma, mb *Manager
	logs   *logBuffer
	// stop is the N at which the listeners answer instead of passing the
	// message on (0: never).
	stop atomic.Int64
	// handled counts the messages both listeners were given to pass on.
	handled atomic.Int64
}

// newCyclePair starts the pair, both organisms with maxDepth as
// max_chain_depth.
func newCyclePair(t *testing.T, maxDepth, stop int) *cyclePair {
	t.Helper()
	return newCyclePairWorkers(t, maxDepth, stop, 0)
}

// newCyclePairWorkers is newCyclePair whose imports have workers workers
// each (0: importWorkers).
func newCyclePairWorkers(t *testing.T, maxDepth, stop, workers int) *cyclePair {
	t.Helper()
	cp := &cyclePair{logs: &logBuffer{}}
	cp.stop.Store(int64(stop))
	aKey, bKey := newKey(t), newKey(t)
	logOf := func(side string) *slog.Logger {
		return slog.New(slog.NewTextHandler(cp.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("side", side)
	}
	pingT, err := xmlpipe.PayloadTypeOf[Ping]()
	if err != nil {
		t.Fatal(err)
	}
	pongT, err := xmlpipe.PayloadTypeOf[Pong]()
	if err != nil {
		t.Fatal(err)
	}
	// pass is one organism's listener: a reply from the import (proxy)
	// is answered to its own caller; a call is passed on, or answered
	// once N reaches stop.
	pass := func(proxy string, next func(n int) any) xmlpipe.Handler {
		return xmlpipe.HandlerFunc(func(_ context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			var n int
			switch v := payload.(type) {
			case *Ping:
				n = v.N
			case *Pong:
				n = v.N
			}
			if md.From == proxy {
				return xmlpipe.Respond(next(n)), nil
			}
			cp.handled.Add(1)
			if stop := cp.stop.Load(); stop > 0 && int64(n) >= stop {
				return xmlpipe.Respond(next(n)), nil
			}
			return xmlpipe.Send(proxy, next(n+1)), nil
		})
	}
	newPump := func(name string, l pump.Listener) *pump.Pump {
		p, err := pump.New(pump.Options{Organism: name, Logger: logOf(name), MaxChainDepth: maxDepth})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Register(l); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = p.Shutdown(ctx)
		})
		return p
	}
	newManager := func(name string, key ed25519.PrivateKey, p *pump.Pump, gc config.Gateway, imp imported) *Manager {
		m, err := New(Options{Organism: name, Key: key, Pump: p, Logger: logOf(name), BackoffBase: 10 * time.Millisecond,
			Gateways: []config.Gateway{gc}})
		if err != nil {
			t.Fatal(err)
		}
		m.workers = workers
		if err := m.gateways[0].register([]imported{imp}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Error(err)
			}
		})
		return m
	}

	cp.b = newPump("b", pump.Listener{Name: "ping", Description: "passes pings on", Payload: pingT,
		Handler: pass("pong", func(n int) any { return &Pong{N: n} })})
	cp.mb = newManager("b", bKey, cp.b, config.Gateway{Name: "a", TrustedIdentity: writePublic(t, aKey),
		Export: []string{"Ping"}, Import: []string{"Pong"}},
		imported{Tag: "Pong", Name: "pong", Description: "A's pong", XSD: pongT.XSD()})
	cp.mb.Start()
	srv := httptest.NewUnstartedServer(cp.mb.Handler())
	cert, err := certs.SelfSigned(t.TempDir(), []string{"127.0.0.1", "localhost"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	cp.a = newPump("a", pump.Listener{Name: "pong", Description: "passes pongs on", Payload: pongT,
		Handler: pass("ping", func(n int) any { return &Ping{N: n} })})
	cp.ma = newManager("a", aKey, cp.a, config.Gateway{Name: "b", RemoteURL: "wss" + strings.TrimPrefix(srv.URL, "https"),
		TrustedIdentity: writePublic(t, bKey), Import: []string{"Ping"}, Export: []string{"Pong"}},
		imported{Tag: "Ping", Name: "ping", Description: "B's ping", XSD: pingT.XSD()})
	cp.ma.Start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of both organisms:\n%s", cp.logs.String())
		}
	})
	return cp
}

// ask sends Pong{0} to A's pong from the console and waits (30 s at most)
// for the conversation's outcome.
func (cp *cyclePair) ask(t *testing.T) (pump.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := cp.a.Ask(ctx, "console", "pong", &Pong{})
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the conversation did not end in 30 s (%d messages passed on): a cycle between organisms runs on",
			cp.handled.Load())
	}
	return ev, err
}

// TestCycleBetweenOrganismsStops: listeners of two organisms that pass a
// message to each other through their gateways for ever are stopped by
// max_chain_depth counted across both organisms — each call carries its
// caller's hops — rather than starting their chain anew at each crossing:
// the conversation fails within the limit, its asker is told why (the
// limit named), and both organisms go on serving.
func TestCycleBetweenOrganismsStops(t *testing.T) {
	const maxDepth = 8
	cp := newCyclePair(t, maxDepth, 0)
	ev, err := cp.ask(t)
	if err == nil {
		t.Fatalf("the cycle ended without an error: %+v", ev)
	}
	// The console's message reaches pong at hop 1; every listener of the
	// chain is one hop, the proxies included: pong, ping (A's proxy),
	// ping (B), pong (B's proxy), … — a listener passes on at hops 1, 3,
	// 5 and 7, and the call made at hop 8 is refused by B.
	if got, want := cp.handled.Load(), int64(maxDepth/2); got != want {
		t.Errorf("listeners passed the message on %d times, want %d (max_chain_depth %d across both organisms)",
			got, want, maxDepth)
	}
	const why = "The conversation exceeded its hop limit: a call that had made 8 hops reached organism a, " +
		"which allows 8 (max_chain_depth); it was not run, and the conversations that made it were stopped."
	var ae *pump.AskError
	if !errors.As(err, &ae) {
		t.Fatalf("ask: %v (%T), want an *pump.AskError", err, err)
	}
	if diff := cmp.Diff(why, ae.Event.Error); diff != "" {
		t.Errorf("what the asker is told (-want +got):\n%s", diff)
	}
	// Both organisms go on: the next conversation, a chain within the
	// limit, completes.
	cp.stop.Store(3)
	cp.handled.Store(0)
	ev, err = cp.ask(t)
	if err != nil {
		t.Fatalf("the conversation after the cycle: %v", err)
	}
	if diff := cmp.Diff(any(&Ping{N: 3}), ev.Payload); diff != "" {
		t.Errorf("the answer after the cycle (-want +got):\n%s", diff)
	}
}

// TestForgedHopCountRefused: a peer's call whose hop count is not one —
// negative, not a number, beyond any integer — or one at the callee's
// max_chain_depth already is refused with a nack saying so (the caller's
// call fails with it); the callee's listener never sees it, and the
// callee goes on serving the peer.
func TestForgedHopCountRefused(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	withHops := func(hops string) []byte {
		lt := stage.NewThreadID()
		e := &envelope{From: "a", To: "echo", Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: time.Now()},
			Payload: []byte(`<Echo xmlns=""><Text>forged</Text></Echo>`)}
		// The attribute as a hostile peer writes it, in its canonical
		// place (attributes in name order: hops before id), signed.
		b := bytes.Replace(e.build(), []byte(`<link xmlns="`+NS+`" id=`), []byte(`<link xmlns="`+NS+`" hops="`+hops+`" id=`), 1)
		signed, err := envsig.Sign(r.key, b)
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	const deep = "The conversation exceeded its hop limit: a call that had made 256 hops reached organism b, " +
		"which allows 256 (max_chain_depth); it was not run, and the conversations that made it were stopped."
	for _, tc := range []struct {
		hops string
		want frame
	}{
		{"-1", frame{Type: frameNack, Error: `bad hop count "-1": not a number of hops`}},
		{"abc", frame{Type: frameNack, Error: `bad hop count "abc": not a number of hops`}},
		{"+3", frame{Type: frameNack, Error: `bad hop count "+3": not a number of hops`}},
		{"99999999999999999999999", frame{Type: frameNack, Error: `bad hop count "99999999999999999999999": not a number of hops`}},
		{"256", frame{Type: frameNack, Error: deep, Reason: ReasonTooDeep}},
		{"9223372036854775807", frame{Type: frameNack, Reason: ReasonTooDeep, Error: strings.Replace(deep, "256 hops", "9223372036854775807 hops", 1)}},
	} {
		t.Run(tc.hops, func(t *testing.T) {
			ack, _ := r.send(withHops(tc.hops))
			ack.ID = ""
			if diff := cmp.Diff(tc.want, ack); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
	if got := c.seen(); len(got) != 0 {
		t.Errorf("the echo listener saw %q, want nothing", got)
	}
	// A count within the limit is served.
	ack, answers := r.send(withHops("255"))
	if ack.Type != frameAck {
		t.Fatalf("a call at 255 hops: %+v, want an ack", ack)
	}
	if len(answers) == 0 {
		answers = append(answers, r.next())
	}
	a, err := parse(answers[0])
	if err != nil {
		t.Fatal(err)
	}
	if a.Link.Kind != KindReply || !bytes.Contains(a.Payload, []byte("FORGED")) {
		t.Errorf("answer %s %s, want the echo's reply", a.Link.Kind, a.Payload)
	}
}

// TestChainAcrossOrganismsUnderLimitCompletes: a finite chain through both
// organisms, deeper than either organism's own part of it but within
// max_chain_depth, completes and its answer unwinds back to the asker.
func TestChainAcrossOrganismsUnderLimitCompletes(t *testing.T) {
	cp := newCyclePair(t, 8, 3)
	ev, err := cp.ask(t)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ev.Payload.(*Ping)
	if !ok {
		t.Fatalf("answer %T %#v, want *Ping", ev.Payload, ev.Payload)
	}
	if diff := cmp.Diff(&Ping{N: 3}, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if n := cp.handled.Load(); n != 4 {
		t.Errorf("listeners passed the message on %d times, want 4 (N 0 to 3)", n)
	}
}
