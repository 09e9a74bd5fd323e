package pump_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestConcurrencyLimits: max_concurrent_handlers (across listeners), a
// listener's Workers, max_concurrent_per_agent and a listener's fair share
// of the global slots (ceil(N/2)) are never exceeded, and the pump uses
// every slot they allow. Every
// handler blocks until the test releases it, and the test releases one only
// when as many are inside as the limits allow for the messages left, so every
// queued message contends for a slot. Peaks are counted with atomics.
func TestConcurrencyLimits(t *testing.T) {
	tests := []struct {
		name      string
		opts      pump.Options
		listeners int
		agent     bool
		workers   int
		messages  int
		perCap    int // what one listener may run at once (workers or per-agent limit)
		globalCap int // what all listeners may run at once
	}{
		{"max concurrent handlers across listeners", pump.Options{MaxConcurrentHandlers: 2}, 3, false, 3, 9, 3, 2},
		{"listener workers", pump.Options{MaxConcurrentHandlers: 20}, 1, false, 3, 8, 3, 20},
		{"listener workers on two listeners", pump.Options{MaxConcurrentHandlers: 20}, 2, false, 2, 8, 2, 20},
		{"single worker", pump.Options{}, 1, false, 1, 4, 1, 20},
		{"max concurrent per agent", pump.Options{MaxConcurrentPerAgent: 2}, 1, true, 0, 6, 2, 20},
		{"per agent on two agents", pump.Options{MaxConcurrentPerAgent: 1}, 2, true, 0, 6, 1, 20},
		{"global cap below the listeners' workers", pump.Options{MaxConcurrentHandlers: 3}, 2, false, 3, 8, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.listeners
			var active, peak atomic.Int64
			perActive, perPeak := make([]atomic.Int64, n), make([]atomic.Int64, n)
			entered := make(chan int, tc.messages)
			release := make([]chan struct{}, n)
			for k := range release {
				release[k] = make(chan struct{})
			}
			enter := func(k int) {
				updateMax(&peak, active.Add(1))
				updateMax(&perPeak[k], perActive[k].Add(1))
				entered <- k
				select {
				case <-release[k]:
				case <-t.Context().Done():
				}
				perActive[k].Add(-1)
				active.Add(-1)
			}
			// One payload type per listener: l0 takes Job, l1 Ping, l2 Pong.
			all := []pump.Listener{
				listenerOf(t, "l0", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) { enter(0); return nil, nil }),
				listenerOf(t, "l1", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) { enter(1); return nil, nil }),
				listenerOf(t, "l2", func(context.Context, *Pong, xmlpipe.Metadata) (xmlpipe.Response, error) { enter(2); return nil, nil }),
			}
			payloads := []func(string) any{
				func(s string) any { return &Job{Label: s} },
				func(s string) any { return &Ping{Text: s} },
				func(s string) any { return &Pong{Text: s} },
			}
			ls := all[:n]
			for k := range ls {
				ls[k].Agent, ls[k].Workers = tc.agent, tc.workers
			}
			p := startPump(t, tc.opts, ls...)
			remaining := make([]int, n)
			outs := make([]*recorder, tc.messages)
			for i := range outs {
				outs[i] = newRecorder()
				k := i % n
				remaining[k]++
				mustSend(t, p, client, ls[k].Name, payloads[k](fmt.Sprint(i)), outs[i])
			}
			inside, insideBy := 0, make([]int, n)
			share := (tc.globalCap + 1) / 2 // a listener's fair share of the global slots
			// bound is how many handlers the limits let in, given what is
			// inside and what has not entered yet.
			bound := func() int {
				b := 0
				for k := range n {
					b += min(tc.perCap, share, insideBy[k]+remaining[k])
				}
				return min(b, tc.globalCap)
			}
			want := bound()
			for turn := 0; inside > 0 || slices.ContainsFunc(remaining, func(r int) bool { return r > 0 }); turn++ {
				if inside > 0 && inside >= bound() {
					// While the limits are full, yield so that a message the
					// pump wrongly lets in gets to enter before any release.
					for range 200 {
						runtime.Gosched()
					}
					k := turn % n
					for insideBy[k] == 0 {
						k = (k + 1) % n
					}
					release[k] <- struct{}{}
					insideBy[k]--
					inside--
					continue
				}
				select {
				case k := <-entered:
					insideBy[k]++
					remaining[k]--
					inside++
				case <-time.After(waitTimeout):
					t.Fatalf("%d handlers inside (%v), %v not entered; no further entry", inside, insideBy, remaining)
				}
			}
			for _, o := range outs {
				o.waitFor(t, "completion", kind(pump.EventComplete))
			}
			if got := peak.Load(); got != int64(want) {
				t.Errorf("peak concurrency %d, want exactly %d", got, want)
			}
			for k := range perPeak {
				if got := perPeak[k].Load(); got > int64(min(tc.perCap, share)) {
					t.Errorf("listener l%d peaked at %d, above its cap %d", k, got, min(tc.perCap, share))
				}
			}
		})
	}
}

// TestScheduling: one single-worker listener is kept busy by a blocker while
// deliveries pile up in its queue, then released; the order it handles them
// in is the policy's. Breadth-first round-robins between conversations;
// depth-first serves the deepest thread first (ties in arrival order).
func TestScheduling(t *testing.T) {
	type msg struct {
		label string
		conv  string // consecutive messages with the same conv are one conversation's, sent at once
		hops  int    // -1: sent straight to the sink; else through the relay (depth hops+1)
	}
	convo := []msg{{"x1", "X", -1}, {"x2", "X", -1}, {"x3", "X", -1}, {"y1", "Y", -1}, {"y2", "Y", -1}, {"z1", "Z", -1}}
	depths := []msg{{"d1", "", 0}, {"d0", "", -1}, {"d3", "", 2}, {"d2", "", 1}, {"d0b", "", -1}}
	tests := []struct {
		name   string
		policy pump.Scheduling
		msgs   []msg
		want   []string
	}{
		{"breadth-first round-robins conversations", pump.BreadthFirst, convo, []string{"x1", "y1", "z1", "x2", "y2", "x3"}},
		{"depth-first with equal depths keeps arrival order", pump.DepthFirst, convo, []string{"x1", "x2", "x3", "y1", "y2", "z1"}},
		{"depth-first serves the deepest first", pump.DepthFirst, depths, []string{"d3", "d2", "d1", "d0", "d0b"}},
		{"breadth-first with distinct conversations keeps arrival order", pump.BreadthFirst, depths,
			[]string{"d1", "d0", "d3", "d2", "d0b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blockerIn, unblock := newGate(), newGate()
			var mu sync.Mutex
			var order []string
			sinkL := listenerOf(t, "sink", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				if in.Label == "blocker" {
					blockerIn.open()
					unblock.wait(t.Context())
					return nil, nil
				}
				mu.Lock()
				order = append(order, in.Label)
				mu.Unlock()
				return nil, nil
			})
			sinkL.Workers = 1
			relay := listenerOf(t, "relay", func(_ context.Context, in *Relay, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				if in.Hops > 0 {
					return xmlpipe.Send("relay", &Relay{Label: in.Label, Hops: in.Hops - 1}), nil
				}
				return xmlpipe.Send("sink", &Job{Label: in.Label}), nil
			})
			// A conversation's outside messages take turns, so its several
			// deliveries at once are the sends of one handler.
			batch := listenerOf(t, "batch", func(_ context.Context, in *Batch, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				sends := make([]*xmlpipe.SendResponse, len(in.Labels))
				for i, l := range in.Labels {
					sends[i] = &xmlpipe.SendResponse{To: "sink", Payload: &Job{Label: l}}
				}
				return xmlpipe.SendAll(sends...), nil
			})
			marker := sink[Ping](t, "marker", newProbe())
			// One ingress worker: deliveries reach the sink's queue in the order
			// the test produces them.
			p := startPump(t, pump.Options{Scheduling: tc.policy, MaxConcurrentPipelines: 1}, sinkL, relay, batch, marker)
			events := newRecorder()
			p.Subscribe(events)
			out := newRecorder()
			mustSend(t, p, client, "sink", &Job{Label: "blocker"}, out)
			blockerIn.wait(waitCtx(t))
			for i := 0; i < len(tc.msgs); {
				m := tc.msgs[i]
				labels := []string{m.label}
				switch {
				case m.hops >= 0:
					mustSend(t, p, client, "relay", &Relay{Label: m.label, Hops: m.hops}, out)
				case m.conv == "":
					mustSend(t, p, client, "sink", &Job{Label: m.label}, out)
				default:
					for i+len(labels) < len(tc.msgs) && tc.msgs[i+len(labels)].conv == m.conv {
						labels = append(labels, tc.msgs[i+len(labels)].label)
					}
					mustSend(t, p, client, "batch", &Batch{Labels: labels}, out)
				}
				i += len(labels)
				for _, label := range labels {
					events.waitFor(t, "delivery of "+label+" to the sink", func(e pump.Event) bool {
						j, ok := e.Payload.(*Job)
						return e.Kind == pump.EventMessage && e.Listener == "sink" && ok && j.Label == label
					})
				}
			}
			// The single ingress worker finished queueing everything before it
			// takes this marker.
			mustSend(t, p, client, "marker", &Ping{}, out)
			if q := queueDepth(p, "sink"); q != len(tc.msgs) {
				t.Fatalf("sink queue holds %d, want %d", q, len(tc.msgs))
			}
			unblock.open()
			out.waitFor(t, "every conversation complete", func(pump.Event) bool {
				mu.Lock()
				defer mu.Unlock()
				return len(order) == len(tc.msgs)
			})
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.want, order); diff != "" {
				t.Errorf("service order (-want +got):\n%s", diff)
			}
		})
	}
}

// queueDepth returns how many deliveries wait in a listener's queue.
func queueDepth(p *pump.Pump, name string) int {
	for _, l := range p.Listeners() {
		if l.Name == name {
			return l.QueueDepth
		}
	}
	return -1
}
