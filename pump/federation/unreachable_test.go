package federation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// notices collects what Options.Notify tells callers.
type notices struct {
	mu    sync.Mutex
	lines []string
}

func (n *notices) notify(thread, from, text string) {
	n.mu.Lock()
	n.lines = append(n.lines, from+": "+text)
	n.mu.Unlock()
}

func (n *notices) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// TestUnreachablePeerCallerTold: a call to an organism that cannot be
// reached tells its caller within seconds that it waits for the peer
// (once, not at every check), and at its call_timeout fails saying why —
// the peer unreachable for how long — in an *xmlpipe.InputError, the text
// every surface tells the caller, rather than only the canned failure.
func TestUnreachablePeerCallerTold(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile string // the caller's thread's security profile
		peer    string // how the peer is named to the caller
	}{
		{"no profile", "", "organism b"},
		// A profile shows listeners, never which organism serves them.
		{"profiled", "calc", "the organism serving echo"},
	} {
		t.Run(tc.name, func(t *testing.T) { unreachablePeerCallerTold(t, tc.profile, tc.peer) })
	}
}

// unreachablePeerCallerTold is TestUnreachablePeerCallerTold for a
// caller's thread with profile, told of the peer as peer.
func unreachablePeerCallerTold(t *testing.T, profile, peer string) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "wss://" + closed.Addr().String()
	_ = closed.Close()
	aKey := newKey(t)
	c := newCallee(t, aKey)
	told := &notices{}
	a := newCallerBefore(t, aKey, c, t.TempDir(), func(g *config.Gateway) {
		g.RemoteURL = nobody
		g.CallTimeout = config.Duration(3 * noticeAfter)
	}, func(m *Manager) {
		m.opts.Notify = func(thread, from, text string) {
			told.notify(thread, from, text)
			// While its caller is told, the conversation waits on b.
			if gw, ok := m.WaitsOnUnreachable(thread, func(string) string { return "" }); !ok || gw != "b" {
				told.notify(thread, "WaitsOnUnreachable", fmt.Sprintf("%q, %v; want b", gw, ok))
			}
		}
	})
	defer a.m.Close()

	md := callMetadata()
	if _, _, _, err := a.pump.Threads().JoinAs(md.ThreadID, md.From, "echo", profile); err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	r, err := a.echo.Handle(context.Background(), a.once, md)
	if r != nil || err == nil {
		t.Fatalf("a call to an unreachable peer: %v, %v; want its call_timeout's error", r, err)
	}
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("error %v, want ErrTimeout", err)
	}
	ie, ok := errors.AsType[*xmlpipe.InputError](err)
	if !ok {
		t.Fatalf("error %v carries no text for the caller (*xmlpipe.InputError)", err)
	}
	if got := ie.Error(); !strings.HasPrefix(got, "echo: "+peer+" unreachable for ") || !strings.Contains(got, "call_timeout (6s)") ||
		(peer != "organism b" && strings.Contains(got, " b ")) {
		t.Errorf("the caller is told %q, want why: %s unreachable for …, its call_timeout (6s)", got, peer)
	}
	lines := told.all()
	if len(lines) != 1 {
		t.Fatalf("the caller was told %d lines while the call waited, want 1: %q", len(lines), lines)
	}
	if !strings.HasPrefix(lines[0], "echo: "+peer+" is unreachable (down for ") ||
		!strings.Contains(lines[0], "it goes on when it is back, or fails at its call_timeout (6s)") {
		t.Errorf("the caller was told %q", lines[0])
	}
	if d := time.Since(begun); d < 3*noticeAfter {
		t.Errorf("the call failed after %s, before its call_timeout", d)
	}
}

// TestReachablePeerCallerNotTold: a call the peer answers, reachable all
// along, tells its caller nothing but the answer.
func TestReachablePeerCallerNotTold(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	told := &notices{}
	a := newCallerBefore(t, aKey, c, t.TempDir(), func(*config.Gateway) {}, func(m *Manager) { m.opts.Notify = told.notify })
	defer a.m.Close()
	waitUntil(t, "the link never came up", func() bool { return a.m.Status()[0].Connected })
	answered := make(chan error, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		if err == nil {
			err = answerIs(r, "ONCE")
		}
		answered <- err
	}()
	// The callee holds the call past two checks of the link.
	time.AfterFunc(2*noticeAfter+noticeAfter/2, func() { close(hold) })
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call was never answered")
	}
	if lines := told.all(); len(lines) != 0 {
		t.Errorf("the caller of a reachable peer was told %q", lines)
	}
}
