package federation

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
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
	// upRate, when set, is how many bytes a second pass towards the
	// target: a slow uplink.
	upRate atomic.Int64
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
			go func() { defer wg.Done(); f.pipe(out, in, true) }()
			go func() { defer wg.Done(); f.pipe(in, out, false) }()
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

// pipe copies from src to dst, holding each piece while frozen; up is
// the direction towards the target, which upRate slows.
func (f *freezer) pipe(dst, src net.Conn, up bool) {
	buf := make([]byte, 32<<10)
	for {
		chunk := buf
		rate := f.upRate.Load()
		if up && rate > 0 {
			chunk = buf[:4<<10]
		}
		n, err := src.Read(chunk)
		if n > 0 {
			if up && rate > 0 {
				time.Sleep(time.Duration(n) * time.Second / time.Duration(rate)) // the link's pace, not a wait for an event
			}
			f.mu.Lock()
			for f.frozen {
				f.cond.Wait()
			}
			f.mu.Unlock()
			if _, werr := dst.Write(chunk[:n]); werr != nil {
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

// TestSlowUploadWhileACallWaitsKeepsTheLink: a large call crossing a slow
// uplink while another call waits keeps the link, however long the peer
// is silent meanwhile: the peer's pong waits behind what it still reads,
// and the write's own deadline judges it, not the probe of a silent link.
// Cut, the link would be made again and the call sent again from its
// first byte, as slowly, for ever.
func TestSlowUploadWhileACallWaitsKeepsTheLink(t *testing.T) {
	silence, timeout := probeSilence, probeTimeout
	probeSilence, probeTimeout = 500*time.Millisecond, 3*time.Second
	t.Cleanup(func() { probeSilence, probeTimeout = silence, timeout })
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	entered := make(chan string, 2)
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

	answered := make(chan error, 2)
	call := func(text string) {
		l, _ := a.pump.Lookup("echo")
		p, err := l.Payload.Decode([]byte("<Echo><Text>" + text + "</Text></Echo>"))
		if err != nil {
			answered <- err
			return
		}
		r, err := a.echo.Handle(context.Background(), p, callMetadata())
		if err == nil {
			err = answerIs(r, strings.ToUpper(text))
		}
		answered <- err
	}
	go call("waits")
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the first call never reached the callee")
	}
	// 384 KiB at 64 KiB/s: some 6 s on the way, twice the probe's limit.
	f.upRate.Store(64 << 10)
	go call(strings.Repeat("x", 384<<10))
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the large call never reached the callee")
	}
	f.upRate.Store(0)
	close(hold)
	for range 2 {
		select {
		case err := <-answered:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a call was never answered")
		}
	}
	if lines := told.all(); len(lines) != 0 {
		t.Errorf("the callers were told %q while the link carried a large call", lines)
	}
	if strings.Contains(c.logs.String(), ErrPeerSilent.Error()) {
		t.Error("the link was cut as silent while it carried a large call")
	}
	if got := len(c.seen()); got != 2 {
		t.Errorf("the callee ran %d calls, want 2", got)
	}
}
