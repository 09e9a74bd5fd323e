package federation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestChangedOfferKeepsCalls: a reload that changes a gateway's
// description, import, export or profile applies them in place: a call
// waiting on the peer is answered, not failed as "gateway removed" by a
// restart. On the caller, the imported listener is described with the
// new description at once; on the callee, an export taken out is told to
// the linked caller (exports-changed), whose import goes, while the call
// already served still gets its answer.
func TestChangedOfferKeepsCalls(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	pt, err := xmlpipe.PayloadTypeOf[Echo]()
	if err != nil {
		t.Fatal(err)
	}
	meta := &exportsMeta{}
	meta.set(imported{Tag: "Echo", Name: "echo", Description: "echo", XSD: pt.XSD()})
	c.m.opts.Meta = exportFiltered{meta}
	entered := make(chan string, 1)
	c.mu.Lock()
	c.entered = entered
	c.mu.Unlock()
	var gc config.Gateway
	a := newCallerWith(t, aKey, c, t.TempDir(), func(g *config.Gateway) { gc = *g })
	defer a.m.Close()
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release()
	answered := make(chan error, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		if err == nil {
			err = answerIs(r, "ONCE")
		}
		answered <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the call never reached the callee's echo")
	}
	where := func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) }

	// The caller's gateway: every field of its offer changes.
	var ch *GatewayChange
	gc.Description = "organism B, renamed"
	gc.Import = append(gc.Import, "Other")
	gc.Export = []string{"Echoed"}
	gc.Profile = "guests"
	ch, err = a.m.PlanGateways([]config.Gateway{gc}, where)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"b"}, ch.Changed); d != "" {
		t.Errorf("caller changed (-want +got):\n%s", d)
	}
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if l, ok := a.pump.Lookup("echo"); !ok || !strings.Contains(l.Description, "organism B, renamed") {
		t.Errorf("the import's description after the change: %q (present %v)", l.Description, ok)
	}
	if s := a.m.Status()[0]; s.Waiting != 1 || !cmp.Equal(s.Exports, []string{"Echoed"}) {
		t.Errorf("caller status after the change: waiting %d, exports %q", s.Waiting, s.Exports)
	}

	// The callee's gateway stops exporting Echo: the caller hears of it on
	// the live link and drops its import.
	conn := func() *conn {
		g := a.m.list()[0]
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.conn
	}
	link := conn()
	cgc := c.m.list()[0].settings()
	cgc.Export = nil
	cgc.Description = "no more echoes"
	ch, err = c.m.PlanGateways([]config.Gateway{cgc}, where)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a"}, ch.Changed); d != "" {
		t.Errorf("callee changed (-want +got):\n%s", d)
	}
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the caller kept the import of an export taken out", func() bool {
		_, ok := a.pump.Lookup("echo")
		return !ok
	})
	if conn() != link {
		t.Error("the caller's import was dropped by a new link, not on the live one: the callee's gateway restarted")
	}

	release()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the call across the changed gateways: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the call was never answered; callee status %+v, caller status %+v", c.m.Status(), a.m.Status())
	}
	if got := c.seen(); len(got) != 1 {
		t.Errorf("the callee ran %d calls, want 1: %q", len(got), got)
	}
}

// exportFiltered answers meta questions as its exportsMeta does, telling
// only of the capabilities the asking gateway exports now.
type exportFiltered struct{ all *exportsMeta }

func (f exportFiltered) AnswerRemote(gw, profile string, exported func(string) bool, q []byte) ([]byte, error) {
	f.all.mu.Lock()
	caps := slices.Clone(f.all.caps)
	f.all.mu.Unlock()
	shown := &exportsMeta{}
	shown.set(slices.DeleteFunc(caps, func(c imported) bool { return !exported(c.Tag) })...)
	return shown.AnswerRemote(gw, profile, exported, q)
}

// TestAddedImportAskedOnTheLiveLink: a reload that adds a tag to a linked
// gateway's import asks the peer for it at once on the live link — the
// imported listener appears without a new link or a wait for the next
// attempt — and one that takes it out again removes the listener.
func TestAddedImportAskedOnTheLiveLink(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	pt, err := xmlpipe.PayloadTypeOf[Echo]()
	if err != nil {
		t.Fatal(err)
	}
	meta := &exportsMeta{}
	meta.set(imported{Tag: "Echo", Name: "echo", Description: "echo", XSD: pt.XSD()})
	c.m.opts.Meta = exportFiltered{meta}

	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	gc := config.Gateway{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key)}
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Store: openStore(t, t.TempDir(), log),
		Gateways: []config.Gateway{gc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	m.importPause = time.Hour // only the reload asks
	m.Start()
	g := m.list()[0]
	waitUntil(t, "the link never came up", g.linked)
	g.mu.Lock()
	link := g.conn
	g.mu.Unlock()
	where := func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, step := range []struct {
		imports []string
		present bool
	}{{[]string{"Echo"}, true}, {nil, false}} {
		gc.Import = step.imports
		ch, err := m.PlanGateways([]config.Gateway{gc}, where)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"b"}, ch.Changed); d != "" {
			t.Errorf("import %q: changed (-want +got):\n%s", step.imports, d)
		}
		if err := ch.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, fmt.Sprintf("import %q: echo never became present=%v", step.imports, step.present), func() bool {
			_, ok := p.Lookup("echo")
			return ok == step.present
		})
	}
	g.mu.Lock()
	same := g.conn == link
	g.mu.Unlock()
	if !same {
		t.Error("the import changes took a new link: the gateway restarted")
	}
}

// TestImportTakenOutWhileBeingRegistered: a reload that takes an import
// out while the listener asked for it is being registered (the reload
// before added it) removes that listener. It found the listener in the
// pump but not yet among the gateway's, removed nothing, and the listener
// stayed, serving a tag no longer imported.
func TestImportTakenOutWhileBeingRegistered(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	pt, err := xmlpipe.PayloadTypeOf[Echo]()
	if err != nil {
		t.Fatal(err)
	}
	meta := &exportsMeta{}
	meta.set(imported{Tag: "Echo", Name: "echo", Description: "echo", XSD: pt.XSD()})
	c.m.opts.Meta = exportFiltered{meta}

	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	gc := config.Gateway{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key)}
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Store: openStore(t, t.TempDir(), log),
		Gateways: []config.Gateway{gc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	m.importPause = time.Hour // only the reload asks
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	where := func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) }
	reload := func(imports []string) error {
		gc.Import = imports
		ch, err := m.PlanGateways([]config.Gateway{gc}, where)
		if err != nil {
			return err
		}
		return ch.Apply(ctx)
	}
	g := m.list()[0]
	takenOut := make(chan error, 1)
	m.registerHook = func(string) {
		m.registerHook = nil // the registration the reload below races
		go func() { takenOut <- reload(nil) }()
		waitUntil(t, "the second reload never began", func() bool { return len(g.offer().imports) == 0 })
	}
	m.Start()
	waitUntil(t, "the link never came up", g.linked)
	if err := reload([]string{"Echo"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-takenOut:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the reload taking the import out never ended")
	}
	waitUntil(t, "the refresh never ended", func() bool { return !g.refreshing.Load() })
	if _, ok := p.Lookup("echo"); ok {
		t.Error("the listener of an import taken out by a reload stayed")
	}
}
