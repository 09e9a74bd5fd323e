package pump

import (
	"hash/maphash"
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
	_  [40]byte              // keeps neighbouring shards' locks off one cache line
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
