package bus

import (
	"sync"
	"sync/atomic"

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
//
// The numbering follows the pump as it goes (observe, a pump watcher); the
// message log streams each message later, once it is durable (event, a
// subscriber), with the number observe gave it. A message accepted while
// nobody reads the log (no log socket open: read says so) keeps no number
// for its event — the log sends what is accepted once a client has
// subscribed — but its thread's counter still counts it, so the numbers
// stay exact for a reader that comes later.
type slotIndexes struct {
	history historyLen
	read    func() bool
	shards  [slotShards]slotShard
	// pending counts the numbers waiting for their event across shards:
	// while there is none, event takes no lock.
	pending atomic.Int64
}

// slotShards is how many independently locked shards slotIndexes has.
const slotShards = 32

// slotShard holds the counters of the conversations that hash to it.
type slotShard struct {
	mu      sync.Mutex
	next    map[string]int      // thread → its next slot index
	byConv  map[string][]string // conversation → its counted threads
	pending map[slotKey]int     // numbered messages whose durable event is due
	// free are the thread lists of completed conversations, emptied, kept
	// for the next conversations (one list a conversation, made and dropped
	// at the pace of conversations).
	free [][]string
}

// maxFreeThreadLists bounds the emptied thread lists a shard keeps.
const maxFreeThreadLists = 64

// threadListCap is the capacity of a new thread list: a conversation
// usually numbers a few threads, appended without growing the list.
const threadListCap = 4

// slotKey identifies one delivery of a message: its envelope (the same
// bytes in the watcher's and the subscriber's event) and the thread.
type slotKey struct {
	env    *byte
	thread string
}

// newSlotIndexes numbers from the histories h, keeping each number for its
// event while read reports a reader of the log (nil: always).
func newSlotIndexes(h historyLen, read func() bool) *slotIndexes {
	x := &slotIndexes{history: h, read: read}
	for i := range x.shards {
		x.shards[i] = slotShard{next: map[string]int{}, byConv: map[string][]string{}, pending: map[slotKey]int{}}
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

// observe numbers an EventMessage as the pump accepts it and forgets a
// completed conversation's counters.
func (x *slotIndexes) observe(e pump.Event) {
	switch e.Kind {
	case pump.EventMessage:
		if len(e.Envelope) == 0 {
			return
		}
		keep := x.read == nil || x.read()
		x.assign(e.Conversation, e.Thread, slotKey{&e.Envelope[0], e.Thread}, keep)
	case pump.EventComplete:
		x.complete(e.Conversation)
	}
}

// event returns, once, the number observe gave an EventMessage (ok).
func (x *slotIndexes) event(e pump.Event) (slot int, ok bool) {
	if e.Kind != pump.EventMessage || len(e.Envelope) == 0 || x.pending.Load() == 0 {
		return 0, false
	}
	k := slotKey{&e.Envelope[0], e.Thread}
	sh := x.shard(e.Conversation)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if slot, ok = sh.pending[k]; ok {
		delete(sh.pending, k)
		x.pending.Add(-1)
	}
	return slot, ok
}

// assign numbers the message k, the next of thread: with keep, its number
// waits in pending for event. A thread already counted takes one lock of
// its shard; a new one reads its history between two.
func (x *slotIndexes) assign(conv, thread string, k slotKey, keep bool) {
	sh := x.shard(conv)
	sh.mu.Lock()
	if n, seen := sh.next[thread]; seen {
		sh.next[thread] = n + 1
		if keep {
			x.keep(sh, k, n)
		}
		sh.mu.Unlock()
		return
	}
	sh.mu.Unlock()
	h := x.history(thread)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n, seen := sh.next[thread]
	if !seen { // else another event of thread was numbered meanwhile
		n = h
		sh.byConv[conv] = append(sh.threadList(conv), thread)
	}
	sh.next[thread] = n + 1
	if keep {
		x.keep(sh, k, n)
	}
}

// keep holds the number n of message k for its event (sh.mu held).
func (x *slotIndexes) keep(sh *slotShard, k slotKey, n int) {
	before := len(sh.pending)
	sh.pending[k] = n
	if len(sh.pending) > before {
		x.pending.Add(1)
	}
}

// threadList returns conv's list of counted threads: its own, else an
// emptied one of a completed conversation, else a new one (sh.mu held).
func (sh *slotShard) threadList(conv string) []string {
	if list, ok := sh.byConv[conv]; ok {
		return list
	}
	if n := len(sh.free); n > 0 {
		list := sh.free[n-1]
		sh.free[n-1] = nil
		sh.free = sh.free[:n-1]
		return list
	}
	return make([]string, 0, threadListCap)
}

// complete forgets conv's counters, keeping its emptied thread list for
// the next conversations.
func (x *slotIndexes) complete(conv string) {
	sh := x.shard(conv)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	list, ok := sh.byConv[conv]
	if !ok {
		return
	}
	for _, t := range list {
		delete(sh.next, t)
	}
	delete(sh.byConv, conv)
	if len(sh.free) < maxFreeThreadLists && cap(list) <= 4*threadListCap {
		clear(list) // the thread ids go with the conversation
		sh.free = append(sh.free, list[:0])
	}
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

// pendingSize is how many numbered messages wait for their durable event
// (tests).
func (x *slotIndexes) pendingSize() int {
	n := 0
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		n += len(sh.pending)
		sh.mu.Unlock()
	}
	return n
}
