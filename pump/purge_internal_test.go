package pump

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestRemoveConvKeepsTheOthersOrder: taking a conversation's items out of
// a queue leaves the others to be popped in the order they would have been
// without the removal, under either policy and random interleavings of
// pushes and pops; the removed come back in their own pop order.
func TestRemoveConvKeepsTheOthersOrder(t *testing.T) {
	convs := []string{"a", "b", "c", "d"}
	for seed, policy := range []Scheduling{BreadthFirst, DepthFirst} {
		r := rand.New(rand.NewPCG(3, uint64(seed)))
		for round := range 100 {
			q, ref := newSchedQueue(policy), newSchedQueue(policy)
			var popped, refPopped []*delivery
			n := 0
			for range r.IntN(60) + 1 {
				if r.IntN(4) == 0 && q.len() > 0 {
					d, _ := q.pop()
					popped = append(popped, d)
					d, _ = ref.pop()
					refPopped = append(refPopped, d)
					continue
				}
				n++
				d := &delivery{conv: convs[r.IntN(len(convs))], depth: r.IntN(4), thread: string(rune('A' + n%26))}
				q.push(d)
				ref.push(d)
			}
			if !samePtrs(refPopped, popped) {
				t.Fatalf("policy %v round %d: pops before the removal differ", policy, round)
			}
			victim := convs[r.IntN(len(convs))]
			removed := q.removeConv(victim)
			var want, wantRemoved []*delivery
			for ref.len() > 0 {
				d, _ := ref.pop()
				if d.conv == victim {
					wantRemoved = append(wantRemoved, d)
				} else {
					want = append(want, d)
				}
			}
			var got []*delivery
			for q.len() > 0 {
				d, _ := q.pop()
				got = append(got, d)
			}
			if !samePtrs(want, got) {
				t.Fatalf("policy %v round %d: after removing %s the others pop in another order", policy, round, victim)
			}
			if !samePtrs(wantRemoved, removed) {
				t.Fatalf("policy %v round %d: removed %d items of %s, want %d in pop order", policy, round,
					len(removed), victim, len(wantRemoved))
			}
			if policy == BreadthFirst && len(q.convs) != 0 {
				t.Fatalf("round %d: breadth-first state left for %v", round, q.convs)
			}
		}
	}
}

// samePtrs reports whether a and b hold the same deliveries in the same
// order.
func samePtrs(a, b []*delivery) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// queuedJob is the payload of the listener of TestLateQueuingOfAKilledConversation.
type queuedJob struct{ Label string }

// TestLateQueuingOfAKilledConversation: a delivery of a killed
// conversation that reaches a paused listener's queue after Kill swept the
// queues — a halted handling put back (requeue), or an output or released
// hold queued (enqueue) — does not stay there: it is dead-lettered at once,
// its accounting released, and its conversation completes.
func TestLateQueuingOfAKilledConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue func(p *Pump, l *listener, d *delivery)
	}{
		{name: "enqueue", queue: func(p *Pump, l *listener, d *delivery) { p.enqueue(l, d) }},
		{name: "requeue", queue: func(p *Pump, l *listener, d *delivery) { p.requeue(l, d) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pt, err := xmlpipe.PayloadTypeOf[queuedJob]()
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Register(Listener{Name: "jobs", Payload: pt, Handler: xmlpipe.HandlerFunc(
				func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })}); err != nil {
				t.Fatal(err)
			}
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := p.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			}()
			l := p.routes.Load().lookup("jobs")
			if err := p.Pause("jobs"); err != nil {
				t.Fatal(err)
			}
			const conv = "conv-1"
			done := make(chan Event, 4)
			p.Subscribe(OutletFunc(func(e Event) {
				if e.Conversation == conv {
					done <- e
				}
			}))
			p.convHold(conv) // in flight: the message about to be queued
			if _, err := p.Kill(conv); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			d := &delivery{conv: conv, thread: conv, from: "client", to: "jobs", payloadName: "queuedJob", at: l}
			p.holdDelivery(d)
			p.convHold(conv)
			tc.queue(p, l, d)
			p.convDone(conv) // the caller's own hold, as the ingress stages release theirs
			type state struct {
				QueueDepth, InFlight int
				Running              bool
				Events               []EventKind
			}
			got := state{QueueDepth: l.queue.len(), InFlight: p.InFlight(), Running: p.Running(conv)}
			for len(done) > 0 {
				got.Events = append(got.Events, (<-done).Kind)
			}
			want := state{Events: []EventKind{EventDeadLetter, EventComplete}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("a killed conversation's delivery queued after the kill (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAKilledConversationComesBackKilled: a message of a conversation
// killed and completed that comes in flight afterwards — one that joined
// its thread before the kill ended it and reaches its listener only now —
// finds the conversation killed, so it is dropped rather than handled;
// once it is done, nothing counts as being killed any more.
func TestAKilledConversationComesBackKilled(t *testing.T) {
	p, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const conv = "conv-2"
	p.convHold(conv)
	if _, err := p.Kill(conv); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	p.convDone(conv) // its last message done: the conversation completed
	type state struct {
		Killed  bool
		Killing int32
	}
	completed := state{Killed: p.killed(conv), Killing: p.killing.Load()}
	p.convHold(conv) // the late message
	late := state{Killed: p.killed(conv), Killing: p.killing.Load()}
	p.convDone(conv)
	done := state{Killed: p.killed(conv), Killing: p.killing.Load()}
	if diff := cmp.Diff([]state{{}, {Killed: true, Killing: 1}, {}}, []state{completed, late, done}); diff != "" {
		t.Errorf("completed, late message in flight, done (-want +got):\n%s", diff)
	}
}

// TestKillSweepDuringAnImmediateStop: a kill's sweep racing ShutdownNow
// treats what it takes as the stopping workers do: dropped undelivered
// (Recover's kill record keeps it from running), not dead-lettered nor
// marked delivered, its accounting released all the same.
func TestKillSweepDuringAnImmediateStop(t *testing.T) {
	pt, err := xmlpipe.PayloadTypeOf[queuedJob]()
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Register(Listener{Name: "jobs", Payload: pt, Handler: xmlpipe.HandlerFunc(
		func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })}); err != nil {
		t.Fatal(err)
	}
	l := p.routes.Load().lookup("jobs")
	const conv = "conv-3"
	events := make(chan Event, 4)
	p.Subscribe(OutletFunc(func(e Event) { events <- e }))
	d := &delivery{conv: conv, thread: conv, from: "client", to: "jobs", payloadName: "queuedJob", at: l}
	p.convHold(conv)
	p.holdDelivery(d)
	l.queue.push(d)
	p.stopNow.Store(true) // ShutdownNow under way
	type state struct {
		Taken, QueueDepth, InFlight, Events int
	}
	got := state{Taken: p.purgeAt(l, conv), QueueDepth: l.queue.len(), InFlight: p.InFlight(), Events: len(events)}
	if diff := cmp.Diff(state{Taken: 1}, got); diff != "" {
		t.Errorf("the sweep during an immediate stop (-want +got):\n%s", diff)
	}
}
