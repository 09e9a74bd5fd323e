package pump

import (
	"hash/maphash"
	"slices"
	"sync"
)

// convShards is how many parts the conversation table is split into.
const convShards = 16

// convTable holds the state of every conversation in flight, split into
// shards with a lock each: every message takes its conversation's entry two
// or three times (convHold, convDone, deferEnd), and one lock for all of them
// made goroutines on both cores queue behind each other.
type convTable struct {
	seed   maphash.Seed
	shards [convShards]convShard
}

// convShard is one part of a convTable.
type convShard struct {
	mu sync.Mutex
	m  map[string]*convState // guarded by mu
	// ended is a ring of the shard's conversations that completed most
	// recently, endedNext its next place (guarded by mu; allocated when
	// the first completes): Kill tells a conversation that ended from one
	// the organism never knew when nothing else remembers it.
	ended     []string
	endedNext int
	_         [16]byte // keeps neighbouring shards' locks off one cache line
}

// endedRemembered is how many completed conversations each shard of the
// table remembers (endedRecently).
const endedRemembered = 1024

// noteEnded remembers that conv completed (s.mu held).
func (s *convShard) noteEnded(conv string) {
	if s.ended == nil {
		s.ended = make([]string, endedRemembered)
	}
	s.ended[s.endedNext] = conv
	s.endedNext = (s.endedNext + 1) % endedRemembered
}

// endedRecently reports whether conv is among the conversations that
// completed most recently (about convShards×endedRemembered of them).
func (t *convTable) endedRecently(conv string) bool {
	s := t.lock(conv)
	defer s.mu.Unlock()
	return slices.Contains(s.ended, conv)
}

// newConvTable returns an empty table.
func newConvTable() *convTable {
	t := &convTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*convState)
	}
	return t
}

// len returns how many conversations are in flight.
func (t *convTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// lock locks and returns the shard of conversation conv.
func (t *convTable) lock(conv string) *convShard {
	s := &t.shards[maphash.String(t.seed, conv)%convShards]
	s.mu.Lock()
	return s
}
