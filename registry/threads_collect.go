package registry

// Collect is the TTL sweep: it removes every node untouched for at least the
// configured TTL whose whole subtree is idle too (a busy descendant keeps its
// ancestors alive), tells the sink and subscribers, and returns how many
// nodes it removed.
func (t *Threads) Collect() int {
	cutoff := t.cfg.Clock().Add(-t.cfg.TTL).UnixNano()
	n := 0
	for i := range t.shards {
		n += t.shards[i].collect(cutoff)
	}
	return n
}

// collect is Collect for one shard: nodes untouched since cutoff go.
func (s *threadShard) collect(cutoff int64) int {
	s.mu.Lock()
	var roots []nodeRef
	for _, r := range s.nodes {
		if s.slab.at(r).parent == 0 {
			roots = append(roots, r)
		}
	}
	var ended []string
	for _, r := range roots {
		if s.sweepIdle(r, cutoff, &ended) {
			ended = s.removeSubtree(ended, r, "")
		}
	}
	s.unlockEnded(ended)
	return len(ended)
}

// sweepIdle reports whether node r and its whole subtree are idle. When r must
// stay, it removes its wholly idle child subtrees itself, appending their ids
// to ended. Callers hold s.mu.
func (s *threadShard) sweepIdle(r nodeRef, cutoff int64, ended *[]string) bool {
	n := s.slab.at(r)
	all := n.touched.Load() <= cutoff
	var idle []nodeRef
	for c := n.child; c != 0; c = s.slab.at(c).next {
		if s.sweepIdle(c, cutoff, ended) {
			idle = append(idle, c)
		} else {
			all = false
		}
	}
	if all {
		return true
	}
	for _, c := range idle {
		*ended = s.removeSubtree(*ended, c, "")
	}
	return false
}
