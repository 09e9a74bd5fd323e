package registry

import (
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
)

// The thread registry holds its nodes without Go pointers: nodes live in
// fixed-size chunks of a slab and name each other by slot number, path
// segments are interned as numbers, and the id index maps a UUID to a slot.
// The garbage collector then never walks the forest. A registry holding
// hundreds of thousands of idle conversations (they live until their TTL)
// used to cost every GC cycle a walk over all of them, and that mark phase,
// taking one of two CPUs for tens of milliseconds, was the pump's latency
// tail.

// nodeRef is a node's slot in a nodeSlab; 0 means "no node".
type nodeRef uint32

// segID is an interned path segment in a segTable; 0 means "no segment".
type segID uint32

// maxHead is the most segments before a root's last one: a conversation
// root's path is [organism, sender] or [organism, sender, target].
const maxHead = 2

// node is one thread. Its path is head + seg for a root and the parent's
// path + seg otherwise, so a node costs the same at any depth. Children form
// a doubly linked list through prev/next, newest first.
type node struct {
	id         uuid.UUID
	created    int64 // unix nanoseconds
	touched    atomic.Int64
	parent     nodeRef
	child      nodeRef // newest child
	prev, next nodeRef // siblings
	seg        segID   // last path segment
	profile    segID   // the security profile's name (0: none; threads_profile.go)
	head       [maxHead]segID
	nhead      uint8 // roots only: how many of head are used
	// marks are the node's lifetime marks (threads_spent.go); they fit
	// in the padding before entered.
	marks uint8
	// entered is the hops the conversation made before it entered this
	// registry (JoinAsAt: a peer organism's chain), the same in every
	// node of a tree; it fits in the padding before depth.
	entered uint16
	depth   int32 // len(path)
}

// slabChunkBits sizes a slab chunk: 4096 nodes (~300 KB).
const slabChunkBits = 12

// nodeSlab stores nodes in chunks that never move, so a *node stays valid
// while the registry's lock is held even if the slab grows. Freed slots are
// reused before new ones.
type nodeSlab struct {
	chunks []*[1 << slabChunkBits]node
	free   []nodeRef
	next   uint64 // the next never-used slot
}

// at returns the node in slot r.
func (s *nodeSlab) at(r nodeRef) *node {
	return &s.chunks[r>>slabChunkBits][r&(1<<slabChunkBits-1)]
}

// alloc returns a zeroed slot.
func (s *nodeSlab) alloc() nodeRef {
	if n := len(s.free); n > 0 {
		r := s.free[n-1]
		s.free = s.free[:n-1]
		return r
	}
	if s.next == 0 {
		s.next = 1 // slot 0 means "no node"
	}
	r := nodeRef(s.next)
	if uint64(r) != s.next {
		panic("registry: more than 2^32 live threads")
	}
	if int(r>>slabChunkBits) == len(s.chunks) {
		s.chunks = append(s.chunks, new([1 << slabChunkBits]node))
	}
	s.next++
	return r
}

// release zeroes slot r and makes it reusable.
func (s *nodeSlab) release(r nodeRef) {
	*s.at(r) = node{}
	s.free = append(s.free, r)
}

// segTable interns path segments with reference counts, so names that no
// live node uses any more (external senders come and go) are forgotten.
type segTable struct {
	names []string // by segID; "" for a free id
	refs  []int32
	ids   map[string]segID
	free  []segID
}

// intern returns name's id, counting one more reference to it.
func (s *segTable) intern(name string) segID {
	if id, ok := s.ids[name]; ok {
		s.refs[id]++
		return id
	}
	if s.ids == nil {
		s.ids = make(map[string]segID)
		s.names, s.refs = []string{""}, []int32{0} // id 0 means "no segment"
	}
	name = strings.Clone(name) // never keep a caller's larger buffer alive
	var id segID
	if n := len(s.free); n > 0 {
		id = s.free[n-1]
		s.free = s.free[:n-1]
		s.names[id], s.refs[id] = name, 1
	} else {
		id = segID(len(s.names))
		s.names, s.refs = append(s.names, name), append(s.refs, 1)
	}
	s.ids[name] = id
	return id
}

// release drops one reference to id, forgetting the name at zero.
func (s *segTable) release(id segID) {
	if id == 0 {
		return
	}
	if s.refs[id]--; s.refs[id] > 0 {
		return
	}
	delete(s.ids, s.names[id])
	s.names[id] = ""
	s.free = append(s.free, id)
}

// name returns the segment id stands for.
func (s *segTable) name(id segID) string {
	return s.names[id]
}

// newNode allocates a node for id created at created, touched at touched,
// whose last segment is seg, under parent (0 for a root, which then has the
// head segments head). Callers hold s.mu.
func (s *threadShard) newNode(id uuid.UUID, parent nodeRef, head []string, seg string, created, touched int64) nodeRef {
	r := s.slab.alloc()
	n := s.slab.at(r)
	n.id, n.created, n.parent = id, created, parent
	n.touched.Store(touched)
	n.seg = s.segs.intern(seg)
	if parent != 0 {
		p := s.slab.at(parent)
		n.depth = p.depth + 1
		n.entered = p.entered
		n.next = p.child
		if p.child != 0 {
			s.slab.at(p.child).prev = r
		}
		p.child = r
	} else {
		for i, h := range head {
			n.head[i] = s.segs.intern(h)
		}
		n.nhead = uint8(len(head))
		n.depth = int32(len(head) + 1)
	}
	s.nodes[id] = r
	return r
}

// unlink detaches r from its parent's list of children. Callers hold s.mu.
func (s *threadShard) unlink(r nodeRef) {
	n := s.slab.at(r)
	if n.parent == 0 {
		return
	}
	if n.prev != 0 {
		s.slab.at(n.prev).next = n.next
	} else {
		s.slab.at(n.parent).child = n.next
	}
	if n.next != 0 {
		s.slab.at(n.next).prev = n.prev
	}
	n.parent, n.prev, n.next = 0, 0, 0
}

// freeNode forgets r's id and frees its segments and its slot. It does not
// touch r's relatives: removeSubtree unlinks the top of a subtree and frees
// the rest whole. Callers hold s.mu.
func (s *threadShard) freeNode(r nodeRef) {
	n := s.slab.at(r)
	delete(s.nodes, n.id)
	if shardOf(n.id) != s.index {
		s.t.dropStray(n.id)
	}
	if len(s.refs) > 0 {
		delete(s.refs, r)
	}
	s.segs.release(n.seg)
	s.segs.release(n.profile)
	for _, h := range n.head[:n.nhead] {
		s.segs.release(h)
	}
	s.slab.release(r)
}
