package bus

import (
	"slices"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// eventTypes are the frame types of the events a /ws socket can subscribe
// to, in the order of their bits in an eventSet.
var eventTypes = []string{
	wire.TypeMessage, wire.TypeOutput, wire.TypeReply, wire.TypeHuh, wire.TypeSystemError, wire.TypeDeadLetter,
	wire.TypeRefusal, wire.TypeComplete, wire.TypeDelta, wire.TypeApproval, wire.TypeApprovalDecided,
	wire.TypeGuardianAlert, wire.TypeHalted, wire.TypeResumed,
}

// eventSet is a set of event frame types, a bit per entry of eventTypes.
type eventSet uint32

// allEvents is every event type: what a socket gets until it subscribes.
var allEvents = eventSet(1)<<len(eventTypes) - 1

// eventBit is the set holding typ alone (0 for a type that is not an
// event).
func eventBit(typ string) eventSet {
	if i := slices.Index(eventTypes, typ); i >= 0 {
		return 1 << i
	}
	return 0
}

// parseEvents turns a subscribe request's list into a set: empty is every
// event; an unknown name is returned as bad.
func parseEvents(names []string) (set eventSet, bad string) {
	if len(names) == 0 {
		return allEvents, ""
	}
	for _, n := range names {
		b := eventBit(n)
		if b == 0 {
			return 0, n
		}
		set |= b
	}
	return set, ""
}

// names lists the set's types, sorted.
func (s eventSet) names() []string {
	out := []string{}
	for i, t := range eventTypes {
		if s&(1<<i) != 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// subscription is a socket's current event set, read by the organism's
// goroutines that post events and replaced by its reader.
type subscription struct{ set atomic.Uint32 }

// newSubscription starts with every event.
func newSubscription() *subscription {
	s := &subscription{}
	s.set.Store(uint32(allEvents))
	return s
}

// wants reports whether frames of type typ are subscribed.
func (s *subscription) wants(typ string) bool { return eventSet(s.set.Load())&eventBit(typ) != 0 }

// replace sets the subscribed events.
func (s *subscription) replace(set eventSet) { s.set.Store(uint32(set)) }
