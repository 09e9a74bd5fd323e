package registry

// Tail returns the last n segments of id's path, oldest first — the
// listeners a chain of forwards reached last — and its depth (the number
// of segments of the whole path); nil and 0 if id is unknown. It walks n
// nodes, not the whole chain, so it stays cheap on a very deep one.
func (t *Threads) Tail(id string, n int) ([]string, int) {
	u, err := parseThreadID(id)
	if err != nil || n <= 0 {
		return nil, 0
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return nil, 0
	}
	node := s.slab.at(r)
	depth := int(node.depth)
	out := make([]string, min(n, depth))
	i := len(out) - 1
	for ; i >= 0 && node.parent != 0; node = s.slab.at(node.parent) {
		out[i] = s.segs.name(node.seg)
		i--
	}
	if i >= 0 { // the root: head[:nhead] + seg
		out[i] = s.segs.name(node.seg)
		i--
		for j := int(node.nhead) - 1; i >= 0 && j >= 0; j-- {
			out[i] = s.segs.name(node.head[j])
			i--
		}
	}
	return out, depth
}
