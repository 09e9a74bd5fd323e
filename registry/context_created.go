package registry

// CreatedTimes appends to dst when each history the buffer holds was
// created (Unix nanoseconds on the buffer's clock, oldest first) and
// returns the result: a kept history is a conversation that may still be
// continued (seed 000 §8.5). It reads every history; callers use it rarely.
func (b *ContextBuffer) CreatedTimes(dst []int64) []int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for c := b.oldest; c != nil; c = c.next {
		dst = append(dst, c.created.UnixNano())
	}
	return dst
}
