package federation

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// fakeClock is a clock a test moves forward.
type fakeClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// countLines counts the log lines holding every one of parts.
func countLines(logs string, parts ...string) int {
	n := 0
	for line := range strings.Lines(logs) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// TestUnreachablePeerLogsOnce: a peer that cannot be reached is warned of
// once as it becomes unreachable, not at every failed dial; reminders
// follow less and less often; and once it is back an INFO line says how
// long it was down and how many calls waited for it meanwhile.
func TestUnreachablePeerLogsOnce(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "wss://" + closed.Addr().String()
	_ = closed.Close()
	aKey := newKey(t)
	c := newCallee(t, aKey)
	clock := &fakeClock{}
	var gc config.Gateway
	a := newCallerBefore(t, aKey, c, t.TempDir(), func(g *config.Gateway) { g.RemoteURL = nobody; gc = *g },
		func(m *Manager) {
			m.opts.BackoffBase, m.opts.BackoffMax = time.Millisecond, 5*time.Millisecond
			m.opts.Clock = clock.now
		})
	defer a.m.Close()
	g := a.m.gateways[0]
	attempts := func() int {
		g.reach.mu.Lock()
		defer g.reach.mu.Unlock()
		return g.reach.attempts
	}
	warns := func() int { return countLines(c.logs.String(), "level=WARN", "cannot reach the peer") }

	waitUntil(t, "the gateway never failed 10 dials", func() bool { return attempts() >= 10 })
	if n := warns(); n != 1 {
		t.Fatalf("%d WARN lines after %d failed dials, want 1:\n%s", n, attempts(), c.logs.String())
	}
	// A minute later: one reminder, then quiet again for two minutes.
	clock.advance(remindFirst + time.Second)
	was := attempts()
	waitUntil(t, "the gateway never failed 10 dials more", func() bool { return attempts() >= was+10 })
	if n, r := warns(), countLines(c.logs.String(), "level=WARN", "cannot reach the peer, still", "down_for=1m"); n != 2 || r != 1 {
		t.Fatalf("%d WARN lines (%d reminders) a minute on, want 2 (1):\n%s", n, r, c.logs.String())
	}
	clock.advance(remindFirst + time.Second) // 2 min 2 s: the next reminder is due at 3 min 1 s
	was = attempts()
	waitUntil(t, "the gateway never failed 10 dials more", func() bool { return attempts() >= was+10 })
	if n := warns(); n != 2 {
		t.Fatalf("%d WARN lines before the second reminder is due, want 2:\n%s", n, c.logs.String())
	}

	answered := make(chan error, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		if err == nil {
			err = answerIs(r, "ONCE")
		}
		answered <- err
	}()
	waitUntil(t, "the call never waited in the outbox", func() bool { return a.m.Status()[0].Queued > 0 })
	gc.RemoteURL = c.url()
	ch, err := a.m.PlanGateways([]config.Gateway{gc}, func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the call queued during the outage: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the call was never answered; status %+v", a.m.Status())
	}
	waitUntil(t, "no line said the peer is reachable again", func() bool {
		return countLines(c.logs.String(), "level=INFO", "the peer is reachable again", "down_for=2m", "calls_queued=1") == 1
	})
}

// TestOutageReminders: the reminders of an outage come 1, 2, 4 … minutes
// apart, up to an hour; a link up ends the outage, and the next failed
// dial begins a new one.
func TestOutageReminders(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var o outage
	type step struct {
		at   time.Duration
		want outageLog
	}
	steps := []step{{0, outageBegan}, {10 * time.Second, outageQuiet}, {61 * time.Second, outageReminder},
		{2 * time.Minute, outageQuiet}, {3*time.Minute + 2*time.Second, outageReminder},
		{6 * time.Minute, outageQuiet}, {7*time.Minute + 3*time.Second, outageReminder}}
	for i, s := range steps {
		if got, _, n := o.failed(t0.Add(s.at), t0); got != s.want || n != i+1 {
			t.Fatalf("step %d at %s: %v after %d dials, want %v after %d", i, s.at, got, n, s.want, i+1)
		}
	}
	var last time.Time
	for i := range 20 {
		at := t0.Add(time.Duration(i+8) * 2 * time.Hour)
		if got, _, _ := o.failed(at, t0); got != outageReminder {
			t.Fatalf("a dial 2 h after the last reminder: %v, want a reminder", got)
		}
		last = at
	}
	if got, _, _ := o.failed(last.Add(remindMax-time.Second), t0); got != outageQuiet {
		t.Fatalf("reminders capped at %s apart: a dial before: %v", remindMax, got)
	}
	o.callQueued()
	was, downFor, _, queued := o.ended(last)
	if !was || downFor != last.Sub(t0) || queued != 1 {
		t.Fatalf("ended: %v %s %d", was, downFor, queued)
	}
	if was, _, _, _ := o.ended(last); was {
		t.Fatal("a second link up ended an outage again")
	}
	if got, _, _ := o.failed(last.Add(time.Second), time.Time{}); got != outageBegan {
		t.Fatalf("the first failed dial after a link up: %v, want the outage to begin", got)
	}
}
