package organism

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// StopQuery is what organism B's slow listener takes in the stop tests.
type StopQuery struct {
	Text string
}

// StopAnswer is its answer.
type StopAnswer struct {
	Text string
}

// convEvents gathers, per conversation, the kinds of the events a test
// watches, and signals each conversation's completion.
type convEvents struct {
	mu       sync.Mutex
	kinds    map[string][]pump.EventKind
	huhs     []string
	complete chan string
}

func newConvEvents() *convEvents {
	return &convEvents{kinds: map[string][]pump.EventKind{}, complete: make(chan string, 64)}
}

func (c *convEvents) outlet(e pump.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Kind {
	case pump.EventReply:
		c.kinds[e.Conversation] = append(c.kinds[e.Conversation], e.Kind)
	case pump.EventHuh:
		c.kinds[e.Conversation] = append(c.kinds[e.Conversation], e.Kind)
		c.huhs = append(c.huhs, e.Error)
	case pump.EventComplete:
		select {
		case c.complete <- e.Conversation:
		default:
		}
	}
}

func (c *convEvents) snapshot() (map[string][]pump.EventKind, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kinds := map[string][]pump.EventKind{}
	for k, v := range c.kinds {
		kinds[k] = append([]pump.EventKind(nil), v...)
	}
	return kinds, append([]string(nil), c.huhs...)
}

// TestGracefulStopLeavesFederatedCallsForTheRestart is the operator's
// repro: A calls B's slow listener three times; while B still works on
// them, A stops gracefully (or at once). The stop does not wait on B, and
// the calls it ends are neither failed nor answered: no <huh> reaches A's client. At
// A's next start the journaled messages are re-delivered and adopt their
// calls, so once B answers, each conversation gets exactly one answer and
// B ran each call once.
func TestGracefulStopLeavesFederatedCallsForTheRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*Organism, context.Context) error
	}{
		{"graceful", (*Organism).Shutdown},
		{"immediate", (*Organism).ShutdownNow},
	} {
		t.Run(tc.name, func(t *testing.T) { testStopLeavesFederatedCalls(t, tc.stop) })
	}
}

// testStopLeavesFederatedCalls is TestGracefulStopLeavesFederatedCallsForTheRestart
// with A stopped by stop.
func testStopLeavesFederatedCalls(t *testing.T, stop func(*Organism, context.Context) error) {
	a, b := newFedSide(t), newFedSide(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	began := make(chan string, 16)
	var mu sync.Mutex
	runs := map[string]int{}
	slow := Func("slowecho", "Echoes, slowly", func(ctx context.Context, q *StopQuery, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		mu.Lock()
		runs[q.Text]++
		mu.Unlock()
		began <- q.Text
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return xmlpipe.Respond(&StopAnswer{Text: "echo " + q.Text}), nil
	})
	cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: slow-b}
meta: {allow_remote: true}
gateways:
  - {name: a, trusted_identity: %s, export: [StopQuery]}
`, a.pub))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startFed(t, cfgB, b, Options{Listeners: []Listener{slow}}, true)
	t.Cleanup(free) // before B's shutdown (cleanups run last first)
	cfgA := func() *config.Organism {
		cfg, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: calls-a}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [StopQuery]}
`, addr, b.pub))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	orgA, _ := startFed(t, cfgA(), a, Options{}, false)
	waitImport(t, orgA, "slowecho")
	before := newConvEvents()
	stopSub := orgA.Pump.Subscribe(pump.OutletFunc(before.outlet))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string][]pump.EventKind{}
	for i := range 3 {
		conv, err := orgA.Pump.Send(ctx, "console", "slowecho", &StopQuery{Text: fmt.Sprint(i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[conv] = []pump.EventKind{pump.EventReply}
	}
	for range 3 {
		select {
		case <-began:
		case <-ctx.Done():
			t.Fatal("B never began the three calls")
		}
	}

	// B works on; A stops. The stop must not wait on B: it ends the calls'
	// waits at once, well within the drain's bound.
	if err := stop(orgA, ctx); err != nil {
		t.Fatalf("A's stop: %v", err)
	}
	stopSub()
	if kinds, huhs := before.snapshot(); len(kinds) != 0 {
		t.Fatalf("the stop answered or failed A's calls: %v (huh: %q)", kinds, huhs)
	}

	// A starts again; its re-delivered messages adopt their calls, and B,
	// resumed, answers each.
	orgA2, _ := startFed(t, cfgA(), a, Options{}, false)
	after := newConvEvents()
	defer orgA2.Pump.Subscribe(pump.OutletFunc(after.outlet))()
	// B answers once the re-delivered messages wait on their calls again
	// (an answer that races the adoption is a separate, reported issue).
	waitOpen(t, orgA2, len(want))
	free()
	for done := map[string]bool{}; len(done) < len(want); {
		select {
		case conv := <-after.complete:
			if _, ok := want[conv]; ok {
				done[conv] = true
			}
		case <-ctx.Done():
			kinds, huhs := after.snapshot()
			t.Fatalf("A's conversations never completed after the restart: %v (huh: %q); gateways %+v",
				kinds, huhs, orgA2.Federation.Status())
		}
	}
	kinds, huhs := after.snapshot()
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("answers after the restart (-want +got):\n%s\nhuh: %q", diff, huhs)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{"0": 1, "1": 1, "2": 1}, runs); diff != "" {
		t.Errorf("B's runs of each call (-want +got):\n%s", diff)
	}
}

// waitOpen waits until n calls of o's first gateway wait for the peer.
func waitOpen(t *testing.T, o *Organism, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if st := o.Federation.Status(); len(st) > 0 && st[0].Open == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls never waited on the peer again; gateways %+v", n, o.Federation.Status())
		}
	}
}
