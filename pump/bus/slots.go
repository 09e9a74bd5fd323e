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
type slotIndexes struct {
	history historyLen

	mu     sync.Mutex
	next   map[string]int      // thread → its next slot index
	byConv map[string][]string // conversation → its counted threads
}

func newSlotIndexes(h historyLen) *slotIndexes {
	return &slotIndexes{history: h, next: map[string]int{}, byConv: map[string][]string{}}
}

// event numbers an EventMessage (ok) and forgets a completed conversation.
func (x *slotIndexes) event(e pump.Event) (slot int, ok bool) {
	switch e.Kind {
	case pump.EventMessage:
		return x.assign(e.Conversation, e.Thread), true
	case pump.EventComplete:
		x.complete(e.Conversation)
	}
	return 0, false
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
