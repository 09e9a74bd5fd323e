package bus

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// recordSink is a sink that remembers the conversations of what it got.
type recordSink struct{ got []string }

func (s *recordSink) conversationEvent(e pump.Event) { s.got = append(s.got, e.Conversation) }
func (s *recordSink) output(o organism.Output)       { s.got = append(s.got, o.Conversation) }

// TestRouterRecyclesRoutes runs many conversations through the router, on
// two sockets in turn: every completed one is forgotten, a route reused for
// the next conversation carries none of its former sockets, and the routes
// kept for reuse stay bounded.
func TestRouterRecyclesRoutes(t *testing.T) {
	r := newRouter()
	a, b := &recordSink{}, &recordSink{}
	const n = 3 * maxFreeRoutes
	for i := range n {
		s, other := sink(a), sink(b)
		if i%2 == 1 {
			s, other = b, a
		}
		conv := string(rune('a'+i%26)) + string(rune('0'+i%10)) + "-" + string(rune(i))
		r.claim(conv, s)
		r.settle(conv, true)
		if r.routed(conv, other) || !r.routed(conv, s) {
			t.Fatalf("conversation %d: routed to the wrong socket", i)
		}
		r.event(pump.Event{Kind: pump.EventMessage, Conversation: conv})
		r.output(organism.Output{Kind: organism.OutputPrint, Conversation: conv})
		r.event(pump.Event{Kind: pump.EventComplete, Conversation: conv})
		r.event(pump.Event{Kind: pump.EventMessage, Conversation: conv}) // after completion: nobody's
	}
	if r.size() != 0 || len(r.bySink[a])+len(r.bySink[b]) != 0 {
		t.Fatalf("%d routes and %d socket routes left, want none", r.size(), len(r.bySink[a])+len(r.bySink[b]))
	}
	if len(r.free) == 0 || len(r.free) > maxFreeRoutes {
		t.Fatalf("%d routes kept for reuse, want 1..%d", len(r.free), maxFreeRoutes)
	}
	for _, rt := range r.free {
		if len(rt.sinks) != 0 || rt.pending != 0 || rt.active || rt.completed || rt.one[0] != nil {
			t.Fatalf("a route kept for reuse is not empty: %+v", rt)
		}
	}
	if len(a.got) != 3*n/2 || len(b.got) != 3*n/2 {
		t.Fatalf("sockets got %d and %d items, want %d each", len(a.got), len(b.got), 3*n/2)
	}

	// A conversation on both sockets, one of which goes away.
	r.claim("both", a)
	r.claim("both", b)
	r.settle("both", true)
	r.settle("both", true)
	r.forget(a)
	a.got, b.got = nil, nil
	r.event(pump.Event{Kind: pump.EventMessage, Conversation: "both"})
	if len(a.got) != 0 || !slices.Equal(b.got, []string{"both"}) {
		t.Fatalf("after forget: %q and %q, want only the remaining socket", a.got, b.got)
	}
	r.forget(b)
	if r.size() != 0 || len(r.bySink) != 0 {
		t.Fatalf("%d routes and %d sockets left after both sockets went", r.size(), len(r.bySink))
	}
}

// TestRouterKeepsRouteForWaitingTurn: a socket that continued its
// conversation while a turn was in flight keeps getting the conversation's
// events after that turn's completion, which says a continuation waits
// (Event.Waiting): the held turn's answer and completion reach it, and the
// route goes with the last completion.
func TestRouterKeepsRouteForWaitingTurn(t *testing.T) {
	r := newRouter()
	s := &recordSink{}
	r.claim("c", s)
	r.settle("c", true)
	r.claim("c", s) // the continuation, sent while the first turn runs
	r.settle("c", true)
	r.event(pump.Event{Kind: pump.EventComplete, Conversation: "c", Waiting: 1})
	r.event(pump.Event{Kind: pump.EventReply, Conversation: "c"})
	r.event(pump.Event{Kind: pump.EventComplete, Conversation: "c"})
	r.event(pump.Event{Kind: pump.EventMessage, Conversation: "c"}) // after the last completion: nobody's
	if diff := cmp.Diff([]string{"c", "c", "c"}, s.got); diff != "" {
		t.Errorf("socket got (-want +got):\n%s", diff)
	}
	if r.size() != 0 {
		t.Errorf("%d routes left after the last completion", r.size())
	}
}
