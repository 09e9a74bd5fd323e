package federation

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// caller is organism A's side of a link to c, with its state in dir.
type caller struct {
	pump *pump.Pump
	m    *Manager
	st   *store.Store
	echo xmlpipe.Handler
	// once is the Echo payload as the pump decodes it for the import.
	once any
}

func newCaller(t *testing.T, key ed25519.PrivateKey, c *callee, dir string) *caller {
	t.Helper()
	return newCallerLimited(t, key, c, dir, 0)
}

// callMetadata is what the pump gives a handler on a fresh thread.
func callMetadata() xmlpipe.Metadata {
	return xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
}

// newCallerLimited is newCaller with the gateway's queue_limit.
func newCallerLimited(t *testing.T, key ed25519.PrivateKey, c *callee, dir string, queue int) *caller {
	t.Helper()
	return newCallerWith(t, key, c, dir, func(gc *config.Gateway) { gc.QueueLimit = queue })
}

// newCallerWith is newCaller whose gateway configuration edit changes.
func newCallerWith(t *testing.T, key ed25519.PrivateKey, c *callee, dir string, edit func(*config.Gateway)) *caller {
	t.Helper()
	return newCallerBefore(t, key, c, dir, edit, nil)
}

// newCallerBefore is newCallerWith whose manager before (when not nil)
// edits before it starts: where a test installs its hooks.
func newCallerBefore(t *testing.T, key ed25519.PrivateKey, c *callee, dir string, edit func(*config.Gateway),
	before func(*Manager)) *caller {
	t.Helper()
	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	st := openStore(t, dir, log)
	gc := config.Gateway{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key), Import: []string{"Echo"}}
	edit(&gc)
	m, err := New(Options{Organism: "a", Key: key, Pump: p, Logger: log, Store: st, Gateways: []config.Gateway{gc}})
	if err != nil {
		t.Fatal(err)
	}
	importEcho(t, m)
	if before != nil {
		before(m)
	}
	m.Start()
	l, _ := p.Lookup("echo")
	once, err := l.Payload.Decode([]byte(`<Echo><Text>once</Text></Echo>`))
	if err != nil {
		t.Fatal(err)
	}
	return &caller{pump: p, m: m, st: st, echo: l.Handler, once: once}
}

// callerPump is the caller's started pump (journaling into j when set),
// shut down when the test ends.
func callerPump(t *testing.T, log *slog.Logger, j pump.Journal) *pump.Pump {
	t.Helper()
	p, err := pump.New(pump.Options{Organism: "a", Logger: log, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Shutdown(ctx)
	})
	return p
}

// importEcho registers the callee's Echo as the caller's import "echo".
func importEcho(t *testing.T, m *Manager) {
	t.Helper()
	pt, _ := xmlpipe.PayloadTypeOf[Echo]()
	if err := m.gateways[0].register([]imported{{Tag: "Echo", Name: "echo", Description: "echo", XSD: pt.XSD()}}); err != nil {
		t.Fatal(err)
	}
}

// stop closes the caller's manager and then its store, as the organism
// does (a restart may open the same directory again).
func (a *caller) stop(t *testing.T) {
	t.Helper()
	if err := a.m.Close(); err != nil {
		t.Fatal(err)
	}
	closeStore(t, a.st)
}

// TestCallAdoptedAfterCallerRestart: a call is open when the calling
// organism stops (as at a crash: the manager goes, the record stays); the
// same message handled again after the restart adopts the call rather
// than calling twice, and gets the answer.
func TestCallAdoptedAfterCallerRestart(t *testing.T) {
	aKey, dir := newKey(t), t.TempDir()
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}

	a1 := newCaller(t, aKey, c, dir)
	first := make(chan error, 1)
	go func() {
		_, err := a1.echo.Handle(context.Background(), a1.once, md)
		first <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); len(c.seen()) == 0; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-first:
			t.Fatalf("the call ended before reaching the callee: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the callee")
		}
	}
	a1.stop(t)
	// The stop ended the wait: the pump is told so (pump.ErrStopping), and
	// the error names the stop and says that without a journal nothing
	// re-delivers the message.
	if err := <-first; !errors.Is(err, pump.ErrStopping) || !errors.Is(err, ErrClosed) ||
		!strings.Contains(err.Error(), "the organism stopped while the call waited on the peer; its message is not journaled") {
		t.Fatalf("the first handling returned %v when its manager stopped, want an error wrapping pump.ErrStopping "+
			"and ErrClosed that names the stop", err)
	}

	a2 := newCaller(t, aKey, c, dir)
	defer a2.m.Close()
	answered := make(chan xmlpipe.Response, 1)
	go func() {
		r, err := a2.echo.Handle(context.Background(), a2.once, md)
		if err != nil {
			t.Error(err)
		}
		answered <- r
	}()
	hold <- struct{}{} // release the callee's echo: its answer goes to a2
	select {
	case r := <-answered:
		rr, ok := r.(*xmlpipe.RespondResponse)
		if !ok {
			t.Fatalf("response %T", r)
		}
		if text, _ := stage.PayloadText(rr.Payload); text != "ONCE" {
			t.Fatalf("answer %#v", rr.Payload)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the adopted call got no answer")
	}
	if got := c.seen(); len(got) != 1 {
		t.Fatalf("the callee saw %d calls, want 1: %q", len(got), got)
	}
}
