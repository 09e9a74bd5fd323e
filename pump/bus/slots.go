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
// Every message event of the organism passes here, from many goroutines at
// once, so the counters are split in slotShards shards by conversation, and
// the history is read without a shard lock held (the context buffer's lock
// is taken by every handler start and thread end).
type slotIndexes struct {
	history historyLen
	shards  [slotShards]slotShard
}

// slotShards is how many independently locked shards slotIndexes has.
const slotShards = 32

// slotShard holds the counters of the conversations that hash to it.
type slotShard struct {
	mu     sync.Mutex
	next   map[string]int      // thread → its next slot index
	byConv map[string][]string // conversation → its counted threads
}

func newSlotIndexes(h historyLen) *slotIndexes {
	x := &slotIndexes{history: h}
	for i := range x.shards {
		x.shards[i] = slotShard{next: map[string]int{}, byConv: map[string][]string{}}
	}
	return x
}

// shard returns conv's shard (FNV-1a of the id).
func (x *slotIndexes) shard(conv string) *slotShard {
	h := uint32(2166136261)
	for i := 0; i < len(conv); i++ {
		h = (h ^ uint32(conv[i])) * 16777619
	}
	return &x.shards[h%slotShards]
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
	sh := x.shard(conv)
	sh.mu.Lock()
	if n, seen := sh.next[thread]; seen {
		sh.next[thread] = n + 1
		sh.mu.Unlock()
		return n
	}
	sh.mu.Unlock()
	h := x.history(thread)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n, seen := sh.next[thread]
	if !seen { // else another event of thread was numbered meanwhile
		n = h
		sh.byConv[conv] = append(sh.byConv[conv], thread)
	}
	sh.next[thread] = n + 1
	return n
}

// complete forgets conv's counters.
func (x *slotIndexes) complete(conv string) {
	sh := x.shard(conv)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, t := range sh.byConv[conv] {
		delete(sh.next, t)
	}
	delete(sh.byConv, conv)
}

// size is how many threads are counted (tests).
func (x *slotIndexes) size() int {
	n := 0
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		n += len(sh.next)
		sh.mu.Unlock()
	}
	return n
}
