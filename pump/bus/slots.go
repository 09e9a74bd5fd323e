package bus

import (
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// historyLen is how many slots a thread's history (its context buffer)
// holds now.
type historyLen func(thread string) int

// slotIndexes numbers each thread's messages the way its context buffer
// does: the n-th message delivered on a thread is slot n of its history.
// The numbers are given from the pump's message events, in the order the
// pump accepts the messages, because a message's slot is appended only when
// its handler starts — later than its event. A thread seen for the first
// time continues after the slots its history already holds (a thread from
// before the server started, or restored after a restart). A conversation's
// counters are dropped when it completes: by then every message of it is in
// the buffer, so its next message starts again from the buffer, exactly.
//
// The numbering follows the pump as it goes (observe, a pump watcher); the
// message log streams each message later, once it is durable (event, a
// subscriber), with the number observe gave it.
type slotIndexes struct {
	history historyLen

	mu      sync.Mutex
	next    map[string]int      // thread → its next slot index
	byConv  map[string][]string // conversation → its counted threads
	pending map[slotKey]int     // numbered messages whose durable event is due
}

// slotKey identifies one delivery of a message: its envelope (the same
// bytes in the watcher's and the subscriber's event) and the thread.
type slotKey struct {
	env    *byte
	thread string
}

func newSlotIndexes(h historyLen) *slotIndexes {
	return &slotIndexes{history: h, next: map[string]int{}, byConv: map[string][]string{}, pending: map[slotKey]int{}}
}

// observe numbers an EventMessage as the pump accepts it and forgets a
// completed conversation's counters.
func (x *slotIndexes) observe(e pump.Event) {
	switch e.Kind {
	case pump.EventMessage:
		if len(e.Envelope) == 0 {
			return
		}
		n := x.assign(e.Conversation, e.Thread)
		x.mu.Lock()
		x.pending[slotKey{&e.Envelope[0], e.Thread}] = n
		x.mu.Unlock()
	case pump.EventComplete:
		x.complete(e.Conversation)
	}
}

// event returns the number observe gave an EventMessage (ok), once.
func (x *slotIndexes) event(e pump.Event) (slot int, ok bool) {
	if e.Kind != pump.EventMessage || len(e.Envelope) == 0 {
		return 0, false
	}
	k := slotKey{&e.Envelope[0], e.Thread}
	x.mu.Lock()
	defer x.mu.Unlock()
	slot, ok = x.pending[k]
	delete(x.pending, k)
	return slot, ok
}

// assign returns the slot index of the next message of thread.
func (x *slotIndexes) assign(conv, thread string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n, seen := x.next[thread]
	if !seen {
		n = x.history(thread)
		x.byConv[conv] = append(x.byConv[conv], thread)
	}
	x.next[thread] = n + 1
	return n
}

// complete forgets conv's counters.
func (x *slotIndexes) complete(conv string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range x.byConv[conv] {
		delete(x.next, t)
	}
	delete(x.byConv, conv)
}

// size is how many threads are counted (tests).
func (x *slotIndexes) size() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.next)
}
