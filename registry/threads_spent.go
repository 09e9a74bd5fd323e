package registry

// A thread's lifetime marks. A thread whose handler forwarded (Send) is
// spent: nothing arrives on it any more except the answers of the
// threads below it. Once its conversation has nothing in flight, no
// answer can come, so EndSpent ends it — the ancestors of a plain chain
// that ended do not wait for the TTL. A conversation root is never marked:
// an outside party continues the conversation on it. A thread that awaits
// answers from outside the conversation (Await) is never ended early.
const (
	// markSpent: the thread's handler forwarded (ForwardAs).
	markSpent uint8 = 1 << iota
	// markAwaiting: the thread waits for answers (Await); it is never
	// spent again.
	markAwaiting
)

// ForwardAs is ExtendAs for a message that id's handler forwards: it also
// marks id spent, unless id is a conversation root or awaits answers
// (Await), and reports whether id is so marked. A spent thread ends in
// EndSpent once no thread below it is live.
func (t *Threads) ForwardAs(id, to, ref, want string) (child, profile string, spent bool, err error) {
	return t.extendMarking(id, to, ref, want, true)
}

// Spend marks live thread id spent although its handler forwarded
// nothing: nothing more can arrive on it (its handler failed and its
// sender was told, or the message that opened it was refused before any
// handler saw it), so it ends in EndSpent with its conversation. It
// reports whether id is so marked: a conversation root, a thread that
// awaits answers (Await) and an unknown id are not.
func (t *Threads) Spend(id string) bool {
	u, err := parseThreadID(id)
	if err != nil {
		return false
	}
	now := t.cfg.Clock().UnixNano()
	s, r := t.lock(u)
	defer s.mu.Unlock()
	if r == 0 {
		return false
	}
	n := s.slab.at(r)
	if n.parent == 0 || n.marks&markAwaiting != 0 {
		return false
	}
	n.marks |= markSpent
	n.touched.Store(now) // the next sweep persists the mark (SaveActivity)
	return true
}

// Await marks live thread id as waiting for answers that come from outside
// its conversation's messages in flight (a handler returned
// xmlpipe.Await): EndSpent never ends it, only End, Prune and the TTL do.
// Unknown ids are ignored.
func (t *Threads) Await(id string) {
	u, err := parseThreadID(id)
	if err != nil {
		return
	}
	now := t.cfg.Clock().UnixNano()
	s, r := t.lock(u)
	if r != 0 {
		n := s.slab.at(r)
		n.marks = n.marks&^markSpent | markAwaiting
		n.touched.Store(now) // the next sweep persists the mark (SaveActivity)
	}
	s.mu.Unlock()
}

// EndSpent ends the spent threads of the conversation rooted at root that
// no live thread is below, deepest first, so a chain of them ends whole,
// and returns how many ended. A thread keep reports true for stays (keep
// may be nil); keep is called with the registry locked and must not call
// it. The pump calls EndSpent when the conversation has nothing in flight
// any more.
func (t *Threads) EndSpent(root string, keep func(id string) bool) int {
	u, err := parseThreadID(root)
	if err != nil {
		return 0
	}
	s, r := t.lock(u)
	if r == 0 {
		s.mu.Unlock()
		return 0
	}
	var ended []string
	s.endSpent(r, keep, &ended)
	s.unlockEnded(ended)
	return len(ended)
}

// endSpent ends the spent threads below node r and r itself when it is
// spent and then has no child, appending their ids to ended; it reports
// whether r ended. Callers hold s.mu.
func (s *threadShard) endSpent(r nodeRef, keep func(id string) bool, ended *[]string) bool {
	n := s.slab.at(r)
	for c := n.child; c != 0; {
		next := s.slab.at(c).next // c may be freed
		s.endSpent(c, keep, ended)
		c = next
	}
	if n.marks != markSpent || n.child != 0 || n.parent == 0 {
		return false
	}
	id := n.id.String() // once: for keep and for the ids ended
	if keep != nil && keep(id) {
		return false
	}
	*ended = s.removeSubtree(*ended, r, id)
	return true
}
