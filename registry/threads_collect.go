package registry

// Collect is the TTL sweep: it removes every node untouched for at least the
// configured TTL whose whole subtree is idle too (a busy descendant keeps its
// ancestors alive), tells the sink and subscribers, and returns how many
// nodes it removed.
func (t *Threads) Collect() int {
	cutoff := t.cfg.Clock().Add(-t.cfg.TTL).UnixNano()
	t.mu.Lock()
	var roots []*node
	for _, n := range t.nodes {
		if n.parent == nil {
			roots = append(roots, n)
		}
	}
	var ended []string
	for _, r := range roots {
		if t.sweepIdle(r, cutoff, &ended) {
			ended = append(ended, t.removeSubtree(r)...)
		}
	}
	t.queueEnded(ended)
	t.mu.Unlock()
	t.deliver()
	return len(ended)
}

// sweepIdle reports whether n and its whole subtree are idle. When n must
// stay, it removes its wholly idle child subtrees itself, appending their ids
// to ended. Callers hold t.mu.
func (t *Threads) sweepIdle(n *node, cutoff int64, ended *[]string) bool {
	all := n.touched.Load() <= cutoff
	var idle []*node
	for _, c := range n.children {
		if t.sweepIdle(c, cutoff, ended) {
			idle = append(idle, c)
		} else {
			all = false
		}
	}
	if all {
		return true
	}
	for _, c := range idle {
		*ended = append(*ended, t.removeSubtree(c)...)
	}
	return false
}
