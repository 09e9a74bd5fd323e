package registry

import (
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// threadShardBits is how many bits of a thread id choose its shard: the low
// bits of the id's last byte, which are random in a version 4 UUID.
// Extend sets them in a child's id to its parent's shard, so a conversation's
// threads share one shard and lock; a child id keeps 122 − threadShardBits
// random bits.
//
// One registry lock was the pump's most contended lock: in BenchmarkTwoHop
// every conversation took it five or six times (Begin, Known, Extend, End,
// Caller), and two cores doing registry work made no more progress than one.
const threadShardBits = 3

// threadShards is the number of shards.
const threadShards = 1 << threadShardBits

// threadShard is one part of the forest: whole conversations, under one lock.
type threadShard struct {
	t     *Threads // the registry, for its configuration and strays
	index uint8    // the shard's number: the id bits that name it

	mu    sync.RWMutex
	nodes map[uuid.UUID]nodeRef // guarded by mu, like slab and segs
	slab  nodeSlab
	segs  segTable
	// refs holds the correlation refs of the nodes that have one (few: the
	// threads of an agent's tool calls), outside the pointer-free slab.
	refs map[nodeRef]string

	// pending, delivering, queued, dispatched and subs are guarded by mu;
	// queued counts events ever queued, dispatched those handed to the sink
	// and subscribers, and delivered is signalled when dispatched grows or a
	// deliverer stops.
	pending    []threadEvent
	spare      []threadEvent // a dispatched queue, emptied, for the next (unlockAndDeliver)
	delivering bool
	queued     uint64
	dispatched uint64
	delivered  *sync.Cond
	subs       []func(ids []string)
	// ended remembers the threads that ended most recently with their
	// roots (EndedRoot); guarded by mu.
	ended endedRing

	_ [64]byte // keeps neighbouring shards' locks off one cache line
}

// init prepares an empty shard of t.
func (s *threadShard) init(t *Threads, index uint8) {
	s.t, s.index = t, index
	s.nodes = make(map[uuid.UUID]nodeRef)
	s.delivered = sync.NewCond(&s.mu)
}

// shardOf returns the shard number id names.
func shardOf(id uuid.UUID) uint8 {
	return id[15] & (threadShards - 1)
}

// inShard returns id with its shard bits set to index.
func inShard(id uuid.UUID, index uint8) uuid.UUID {
	id[15] = id[15]&^(threadShards-1) | index
	return id
}

// home returns the shard id names.
func (t *Threads) home(id uuid.UUID) *threadShard {
	return &t.shards[shardOf(id)]
}

// lock write-locks the shard holding id and returns it with id's node. When
// id is not live it returns 0 and a locked shard: id's home, or the shard of
// a stray that ended meanwhile.
func (t *Threads) lock(id uuid.UUID) (*threadShard, nodeRef) {
	return t.find(id, (*sync.RWMutex).Lock, (*sync.RWMutex).Unlock)
}

// rlock is lock with a read lock.
func (t *Threads) rlock(id uuid.UUID) (*threadShard, nodeRef) {
	return t.find(id, (*sync.RWMutex).RLock, (*sync.RWMutex).RUnlock)
}

// find is lock and rlock, locking with lock and unlocking with unlock.
func (t *Threads) find(id uuid.UUID, lock, unlock func(*sync.RWMutex)) (*threadShard, nodeRef) {
	s := t.home(id)
	lock(&s.mu)
	if r := s.nodes[id]; r != 0 || t.nstrays.Load() == 0 {
		return s, r
	}
	stray := t.strayShard(id)
	if stray == nil {
		return s, 0
	}
	unlock(&s.mu)
	lock(&stray.mu)
	return stray, stray.nodes[id]
}

// strayShard returns the shard holding stray id, nil if id is no stray.
func (t *Threads) strayShard(id uuid.UUID) *threadShard {
	t.strayMu.RLock()
	defer t.strayMu.RUnlock()
	return t.strays[id]
}

// isStray reports whether id is a live stray.
func (t *Threads) isStray(id uuid.UUID) bool {
	return t.nstrays.Load() != 0 && t.strayShard(id) != nil
}

// addStray records that id lives in s although it names another shard.
// Callers hold s.mu.
func (t *Threads) addStray(id uuid.UUID, s *threadShard) {
	t.strayMu.Lock()
	if t.strays == nil {
		t.strays = make(map[uuid.UUID]*threadShard)
	}
	t.strays[id] = s
	t.nstrays.Store(int64(len(t.strays)))
	t.strayMu.Unlock()
}

// dropStray forgets stray id. Callers hold the lock of id's shard.
func (t *Threads) dropStray(id uuid.UUID) {
	t.strayMu.Lock()
	delete(t.strays, id)
	t.nstrays.Store(int64(len(t.strays)))
	t.strayMu.Unlock()
}

// callerOf returns the caller and reply thread of node r (whose id is id):
// its parent's last segment and id, or for a root the segment before its
// last and id itself; ErrChainExhausted for a one-segment path. Callers hold
// s.mu.
func (s *threadShard) callerOf(r nodeRef, id string) (caller, replyThread string, err error) {
	n := s.slab.at(r)
	switch {
	case n.depth < 2:
		return "", "", ErrChainExhausted
	case n.parent != 0:
		p := s.slab.at(n.parent)
		return s.segs.name(p.seg), p.id.String(), nil
	default:
		return s.segs.name(n.head[n.nhead-1]), id, nil
	}
}

// removeSubtree detaches r from its parent and frees r and every
// descendant, appending their ids parent-first to dst; id is r's id when
// the caller has it as a string ("" formats it). Callers hold s.mu.
// It remembers them with their conversation's root (EndedRoot).
func (s *threadShard) removeSubtree(dst []string, r nodeRef, id string) []string {
	root := s.slab.at(s.rootRef(r)).id
	s.unlink(r)
	return s.subtree(dst, r, id, func(c nodeRef) {
		s.ended.note(s.slab.at(c).id, root)
		s.freeNode(c)
	})
}

// subtree appends the ids of r and every descendant to dst, parent first,
// calling each (nil: nothing) on every node once its children are noted,
// so that each may free it; id is r's id when the caller has it as a
// string ("" formats it). Callers hold s.mu.
func (s *threadShard) subtree(dst []string, r nodeRef, id string, each func(nodeRef)) []string {
	var buf [8]nodeRef // a chain's subtree fits: the stack stays off the heap
	stack := append(buf[:0], r)
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := s.slab.at(c)
		if c == r && id != "" {
			dst = append(dst, id)
		} else {
			dst = append(dst, n.id.String())
		}
		for k := n.child; k != 0; k = s.slab.at(k).next {
			stack = append(stack, k)
		}
		if each != nil {
			each(c)
		}
	}
	return dst
}

// path returns a fresh copy of node r's full path. Callers hold s.mu.
func (s *threadShard) path(r nodeRef) []string {
	n := s.slab.at(r)
	out := make([]string, n.depth)
	i := len(out) - 1
	for ; n.parent != 0; n = s.slab.at(n.parent) {
		out[i] = s.segs.name(n.seg)
		i--
	}
	out[i] = s.segs.name(n.seg)
	for j, h := range n.head[:n.nhead] {
		out[j] = s.segs.name(h)
	}
	return out
}

// record returns the persisted form of node r. Callers hold s.mu.
func (s *threadShard) record(r nodeRef) ThreadRecord { return s.recordOf(r, "", "") }

// recordOf is record with r's id and its parent's when the caller has them
// as strings ("": formatted here). Callers hold s.mu.
func (s *threadShard) recordOf(r nodeRef, id, parent string) ThreadRecord {
	n := s.slab.at(r)
	if id == "" {
		id = n.id.String()
	}
	rec := ThreadRecord{
		ID:       id,
		Path:     s.path(r),
		Created:  time.Unix(0, n.created).UTC(),
		Touched:  time.Unix(0, n.touched.Load()).UTC(),
		Ref:      s.refs[r],
		Profile:  s.segs.name(n.profile),
		Hops:     int(n.entered),
		Spent:    n.marks&markSpent != 0,
		Awaiting: n.marks&markAwaiting != 0,
	}
	if n.parent != 0 {
		if parent == "" {
			parent = s.slab.at(n.parent).id.String()
		}
		rec.Parent = parent
	}
	return rec
}

// setRef keeps ref as node r's correlation ref ("" keeps none). Callers
// hold s.mu.
func (s *threadShard) setRef(r nodeRef, ref string) {
	if ref == "" {
		return
	}
	if s.refs == nil {
		s.refs = make(map[nodeRef]string)
	}
	s.refs[r] = strings.Clone(ref) // never keep a caller's larger buffer alive
}
