package federation

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// freezer relays TCP connections to a peer and can freeze them all, as a
// SIGSTOP freezes the peer's process: the connections stay open, the
// kernel still accepts new ones, but nothing more passes either way until
// thaw.
type freezer struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	conns  []net.Conn
}

// newFreezer relays connections to target (host:port) until the test ends.
func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target}
	f.cond = sync.NewCond(&f.mu)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, in, out)
			f.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); f.pipe(out, in) }()
			go func() { defer wg.Done(); f.pipe(in, out) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		f.thaw()
		f.mu.Lock()
		for _, c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		wg.Wait()
	})
	return f
}

// pipe copies from src to dst, holding each piece while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.mu.Lock()
			for f.frozen {
				f.cond.Wait()
			}
			f.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close()
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	f.frozen = true
	f.mu.Unlock()
}

func (f *freezer) thaw() {
	f.mu.Lock()
	f.frozen = false
	f.cond.Broadcast()
	f.mu.Unlock()
}

// TestFrozenPeerCallerToldInSeconds: a peer that freezes on a live link
// (SIGSTOP: the connection stays open, nothing comes back) while a call
// waits on it is told to the caller in seconds, as a closed link is — not
// once the keepalive gives the silent link up after 30 s. Once the peer
// thaws, the call still gets its answer, once.
func TestFrozenPeerCallerToldInSeconds(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	entered := make(chan string, 1)
	c.mu.Lock()
	c.entered = entered
	c.mu.Unlock()
	f := newFreezer(t, strings.TrimPrefix(c.url(), "wss://"))
	told := &notices{}
	a := newCallerBefore(t, aKey, c, t.TempDir(), func(g *config.Gateway) {
		g.RemoteURL = "wss://" + f.ln.Addr().String()
	}, func(m *Manager) { m.opts.Notify = told.notify })
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
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the call never reached the callee")
	}
	f.freeze()
	frozen := time.Now()
	waitUntil(t, "the caller was never told the frozen peer is unreachable", func() bool { return len(told.all()) > 0 })
	d := time.Since(frozen)
	t.Logf("told %s after the peer froze", d.Round(100*time.Millisecond))
	if d >= silenceLimit*2/3 {
		t.Errorf("the caller was told the peer is unreachable %s after it froze; want seconds, not the keepalive's %s",
			d.Round(time.Second), silenceLimit)
	}
	if lines := told.all(); !strings.HasPrefix(lines[0], "echo: organism b is unreachable (down for ") {
		t.Errorf("the caller was told %q", lines)
	}

	f.thaw()
	close(hold)
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call was never answered once the peer thawed")
	}
	if got := c.seen(); len(got) != 1 {
		t.Errorf("the callee ran %d calls, want 1: %q", len(got), got)
	}
}
