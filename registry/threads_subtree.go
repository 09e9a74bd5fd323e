package registry

// Subtree returns id and the ids of every live thread beneath it, parent
// first; nil if id is not live. The pump remembers the threads of a
// conversation it kills with it, so that a message naming any of them
// after they ended is refused as the conversation's.
func (t *Threads) Subtree(id string) []string {
	u, err := parseThreadID(id)
	if err != nil {
		return nil
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return nil
	}
	return s.subtree(nil, r, id, nil)
}
