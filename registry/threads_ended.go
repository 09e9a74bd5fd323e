package registry

import "github.com/google/uuid"

// endedRemembered is how many of its threads that ended most recently each
// shard remembers with their conversation root (EndedRoot): about
// threadShards×endedRemembered threads, 32 bytes each plus an index entry,
// allocated when the shard's first thread ends.
const endedRemembered = 4096

// endedThread is a thread that ended and the root of its conversation.
type endedThread struct {
	id, root uuid.UUID
}

// endedRing is a shard's ring of the threads that ended most recently,
// indexed by thread id: a lookup costs one map access, not a scan of the
// ring (a client-chosen new thread id is looked up on every message that
// names it, and misses).
type endedRing struct {
	at   []endedThread
	next int
	// newest maps each id in at to the index of its newest note.
	newest map[uuid.UUID]int32
}

// note remembers that id, of the conversation rooted at root, ended.
func (e *endedRing) note(id, root uuid.UUID) {
	if e.at == nil {
		e.at = make([]endedThread, endedRemembered)
		e.newest = make(map[uuid.UUID]int32, endedRemembered)
	}
	// The note overwritten is forgotten, unless its id was noted again
	// since: the index then points at that newer note.
	if old := e.at[e.next].id; old != (uuid.UUID{}) && e.newest[old] == int32(e.next) {
		delete(e.newest, old)
	}
	e.at[e.next] = endedThread{id: id, root: root}
	if id != (uuid.UUID{}) {
		e.newest[id] = int32(e.next)
	}
	e.next = (e.next + 1) % endedRemembered
}

// rootOf returns the root remembered for ended thread id: the one noted
// last, should id have ended more than once (continued after it ended, then
// ended again under another root).
func (e *endedRing) rootOf(id uuid.UUID) (uuid.UUID, bool) {
	if id == (uuid.UUID{}) {
		return uuid.UUID{}, false
	}
	i, ok := e.newest[id]
	if !ok {
		return uuid.UUID{}, false
	}
	return e.at[i].root, true
}

// rootRef returns the root of node r's conversation. Callers hold s.mu.
func (s *threadShard) rootRef(r nodeRef) nodeRef {
	for p := s.slab.at(r).parent; p != 0; p = s.slab.at(r).parent {
		r = p
	}
	return r
}

// EndedRoot returns the conversation root of id, a thread that is no longer
// live, as it was when id last ended — one of the last endedRemembered threads
// that ended in its shard (Prune, End, EndSpent, Collect) — and whether it
// is remembered. A root's root is itself. Kill uses it to tell the
// conversation of an inner hop's thread that ended with it.
func (t *Threads) EndedRoot(id string) (string, bool) {
	u, err := parseThreadID(id)
	if err != nil {
		return "", false
	}
	s := t.home(u)
	s.mu.RLock()
	root, ok := s.ended.rootOf(u)
	s.mu.RUnlock()
	if !ok {
		return "", false
	}
	return root.String(), true
}
