package registry

// CreatedTimes appends to dst when each live thread was created (Unix
// nanoseconds on the registry's clock, in no particular order) and returns
// the result: what the pump's history of profile definitions is still
// needed for (seed 000 §8.5). It reads every shard; callers use it rarely.
func (t *Threads) CreatedTimes(dst []int64) []int64 {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		for _, r := range s.nodes {
			dst = append(dst, s.slab.at(r).created)
		}
		s.mu.RUnlock()
	}
	return dst
}
