package pump

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSubscribersPublish checks the fan-out: every subscriber gets the
// kinds it asked for (all when it named none), a cancelled one gets
// nothing more, and wants says whether anyone takes a kind.
func TestSubscribersPublish(t *testing.T) {
	var s subscribers
	var got [3][]EventKind
	take := func(i int) Outlet {
		return OutletFunc(func(e Event) { got[i] = append(got[i], e.Kind) })
	}
	s.add(take(0))
	cancel1 := s.add(take(1), EventComplete, EventHuh)
	s.add(take(2), EventMessage)
	for _, k := range []EventKind{EventMessage, EventComplete, EventReply} {
		s.publish(Event{Kind: k})
	}
	cancel1()
	cancel1() // twice is harmless
	s.publish(Event{Kind: EventHuh})
	want := [3][]EventKind{
		{EventMessage, EventComplete, EventReply, EventHuh},
		{EventComplete},
		{EventMessage},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deliveries (-want +got):\n%s", d)
	}

	var only subscribers
	cancel := only.add(take(0), EventComplete)
	tests := []struct {
		kind EventKind
		want bool
	}{{EventComplete, true}, {EventMessage, false}}
	for _, tt := range tests {
		if got := only.wants(tt.kind); got != tt.want {
			t.Errorf("wants(%s) = %v, want %v", tt.kind, got, tt.want)
		}
	}
	cancel()
	if only.wants(EventComplete) || only.n.Load() != 0 {
		t.Errorf("a cancelled subscriber is still counted")
	}
}

// BenchmarkSubscribersPublish is one event handed to the bus's two
// observers of every kind (a watcher set and a subscriber set hold one
// or two each): the fan-out's own cost per event, the outlets doing
// nothing.
func BenchmarkSubscribersPublish(b *testing.B) {
	var s subscribers
	nop := OutletFunc(func(Event) {})
	s.add(nop)
	s.add(nop, EventComplete)
	e := Event{Kind: EventMessage, Conversation: "c"}
	b.ReportAllocs()
	for b.Loop() {
		s.publish(e)
	}
}
