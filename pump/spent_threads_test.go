package pump_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// chainThreads remembers the thread each hop of a chain a → b → c ran on.
type chainThreads struct {
	mu sync.Mutex
	by map[string]string
}

// ran records that listener l ran on thread.
func (c *chainThreads) ran(l, thread string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]string{}
	}
	if c.by[l] == "" {
		c.by[l] = thread
	}
}

// of returns the thread listener l first ran on.
func (c *chainThreads) of(l string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[l]
}

// liveThreads returns the ids of the pump's live threads, sorted.
func liveThreads(p *pump.Pump) []string {
	var ids []string
	for id := range p.Threads().DebugDump() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// sorted returns ids sorted.
func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// TestFinishedChainFreesItsThreads: once a conversation has nothing in
// flight, the threads of its hops that forwarded and wait for nothing end
// with it — a plain chain a → b → c leaves only its root (the thread an
// outside party continues it on), not b's thread until the TTL. A thread
// that can still be answered or continued stays: an agent's (its history,
// the answers it waits for), one whose handler awaits answers, one a todo
// watcher sits on.
func TestFinishedChainFreesItsThreads(t *testing.T) {
	tests := []struct {
		name string
		// agent makes b an agent.
		agent bool
		// b is b's handler, given the pump and the chain's threads.
		b func(p *pump.Pump, in *ChainB, md xmlpipe.Metadata) xmlpipe.Response
		// c is c's answer.
		c func(in *ChainC) xmlpipe.Response
		// keepB: b's thread must outlive the conversation.
		keepB bool
	}{
		{
			name: "plain chain",
			b: func(_ *pump.Pump, in *ChainB, _ xmlpipe.Metadata) xmlpipe.Response {
				return xmlpipe.Send("c", &ChainC{Text: in.Text})
			},
			c: func(*ChainC) xmlpipe.Response { return nil },
		},
		{
			name:  "agent's thread",
			agent: true,
			b: func(_ *pump.Pump, in *ChainB, _ xmlpipe.Metadata) xmlpipe.Response {
				return xmlpipe.Send("c", &ChainC{Text: in.Text})
			},
			c:     func(*ChainC) xmlpipe.Response { return nil },
			keepB: true,
		},
		{
			name: "awaiting a reply",
			b: func(_ *pump.Pump, in *ChainB, _ xmlpipe.Metadata) xmlpipe.Response {
				if in.Text == "answered" { // c's reply: b waits for more, from outside
					return xmlpipe.Await()
				}
				return xmlpipe.Send("c", &ChainC{Text: in.Text})
			},
			c:     func(*ChainC) xmlpipe.Response { return xmlpipe.Respond(&ChainB{Text: "answered"}) },
			keepB: true,
		},
		{
			name: "todo watcher",
			b: func(p *pump.Pump, in *ChainB, md xmlpipe.Metadata) xmlpipe.Response {
				p.Todos().Register(md.ThreadID, "b", "Pong", "", "wait for a pong")
				return xmlpipe.Send("c", &ChainC{Text: in.Text})
			},
			c:     func(*ChainC) xmlpipe.Response { return nil },
			keepB: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p *pump.Pump
			var threads chainThreads
			a := listenerOf(t, "a", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				threads.ran("a", md.ThreadID)
				return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
			})
			b := listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				threads.ran("b", md.ThreadID)
				return tc.b(p, in, md), nil
			})
			if tc.agent {
				b = agent(b, "c")
			}
			c := listenerOf(t, "c", func(_ context.Context, in *ChainC, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				threads.ran("c", md.ThreadID)
				return tc.c(in), nil
			})
			p = startPump(t, pump.Options{}, a, b, c)
			out := newRecorder()
			conv := mustSend(t, p, client, "a", &ChainA{Text: "go"}, out)
			if ev := out.waitFor(t, "completion", kind(pump.EventComplete)); ev.Error != "" {
				t.Fatalf("the conversation completed with %q", ev.Error)
			}
			want := []string{conv}
			if tc.keepB {
				want = sorted(conv, threads.of("b"))
			}
			if diff := cmp.Diff(want, liveThreads(p)); diff != "" {
				t.Errorf("live threads once the conversation completed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPendingCallKeepsTheChain: while one branch of a conversation still
// runs (a call pending: d has not answered), the end of another branch
// frees nothing above them — d's answer travels back through b's thread.
// Once d answers and the conversation completes, the chain ends.
func TestPendingCallKeepsTheChain(t *testing.T) {
	var threads chainThreads
	cDone, dStarted, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := listenerOf(t, "a", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
	})
	b := listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads.ran("b", md.ThreadID)
		if in.Text == "answered" {
			return nil, nil
		}
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "c", Payload: &ChainC{Text: in.Text}},
			&xmlpipe.SendResponse{To: "d", Payload: &Slow{Text: in.Text}}), nil
	})
	c := listenerOf(t, "c", func(context.Context, *ChainC, xmlpipe.Metadata) (xmlpipe.Response, error) {
		defer close(cDone)
		return nil, nil
	})
	d := listenerOf(t, "d", func(ctx context.Context, _ *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		close(dStarted)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return xmlpipe.Respond(&ChainB{Text: "answered"}), nil
	})
	p := startPump(t, pump.Options{}, a, b, c, d)
	out := newRecorder()
	conv := mustSend(t, p, client, "a", &ChainA{Text: "go"}, out)
	waitClosed(t, "c's handling", cDone)
	waitClosed(t, "d's handling", dStarted)
	if !p.Threads().Known(threads.of("b")) {
		t.Fatal("b's thread ended while d's answer to it was pending")
	}
	close(release)
	if ev := out.waitFor(t, "completion", kind(pump.EventComplete)); ev.Error != "" {
		t.Fatalf("the conversation completed with %q", ev.Error)
	}
	if diff := cmp.Diff([]string{conv}, liveThreads(p)); diff != "" {
		t.Errorf("live threads once the conversation completed (-want +got):\n%s", diff)
	}
}

// TestHeldTurnKeepsItsThread: a continuation naming the thread of one of
// the conversation's hops, held while the turn in flight completes, begins
// its turn on that thread — in the same conversation — even though the
// turn before it left the thread spent.
func TestHeldTurnKeepsItsThread(t *testing.T) {
	var p *pump.Pump
	var threads chainThreads
	cStarted, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	roots := make(chan string, 2)
	a := listenerOf(t, "a", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
	})
	b := listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads.ran("b", md.ThreadID)
		roots <- p.Threads().Root(md.ThreadID)
		return xmlpipe.Send("c", &ChainC{Text: in.Text}), nil
	})
	c := listenerOf(t, "c", func(ctx context.Context, _ *ChainC, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		once.Do(func() { close(cStarted) })
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	})
	p = startPump(t, pump.Options{}, a, b, c)
	out := newRecorder()
	conv := mustSend(t, p, client, "a", &ChainA{Text: "go"}, out)
	waitClosed(t, "c's handling", cStarted)
	if got := <-roots; got != conv {
		t.Fatalf("b ran in conversation %s, want %s", got, conv)
	}
	// The turn is in flight (c holds it): the continuation is held.
	next := newRecorder()
	bThread := threads.of("b")
	if _, err := injectErr(t, p, envelope(client, "b", bThread, `<ChainB xmlns=""><Text>again</Text></ChainB>`), next); err != nil {
		t.Fatalf("continuation on b's thread: %v", err)
	}
	close(release)
	next.waitFor(t, "the continuation's completion", kind(pump.EventComplete))
	if got := <-roots; got != conv {
		t.Errorf("the held continuation on b's thread ran in conversation %s, want %s (its thread was freed before its turn)", got, conv)
	}
}

// TestHaltedCallKeepsItsThread: a handling halted while it waits for a
// call's answer (a federation call parks the answer on its thread for the
// next handling) keeps its thread and the chain above it through the
// halt; once handled again and the conversation completes, they end.
func TestHaltedCallKeepsItsThread(t *testing.T) {
	var threads chainThreads
	started := make(chan struct{}, 2)
	halted := make(chan struct{})
	var n int
	var mu sync.Mutex
	a := listenerOf(t, "a", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
	})
	b := listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads.ran("b", md.ThreadID)
		return xmlpipe.Send("gw", &ChainC{Text: in.Text}), nil
	})
	gw := listenerOf(t, "gw", func(ctx context.Context, _ *ChainC, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads.ran("gw", md.ThreadID)
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		started <- struct{}{}
		if first { // the call's answer never comes before the halt
			<-ctx.Done()
			close(halted)
			return nil, ctx.Err()
		}
		return nil, nil
	})
	p := startPump(t, pump.Options{}, a, b, gw)
	out := newRecorder()
	conv := mustSend(t, p, client, "a", &ChainA{Text: "go"}, out)
	waitClosed(t, "gw's handling", started)
	if _, err := p.Halt(pump.HaltAll); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	waitClosed(t, "the halted handling", halted)
	for _, l := range []string{"b", "gw"} {
		if !p.Threads().Known(threads.of(l)) {
			t.Errorf("%s's thread ended while the call on it was halted", l)
		}
	}
	p.Unhalt()
	if ev := out.waitFor(t, "completion", kind(pump.EventComplete)); ev.Error != "" {
		t.Fatalf("the conversation completed with %q", ev.Error)
	}
	if diff := cmp.Diff([]string{conv}, liveThreads(p)); diff != "" {
		t.Errorf("live threads once the conversation completed (-want +got):\n%s", diff)
	}
}

// waitClosed waits until ch is closed or receives, failing the test after
// waitTimeout.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}
