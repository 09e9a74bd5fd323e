package organism

import "sync"

// OutputFeed fans Output out to subscribers: what a Backend's Subscribe
// needs (Local's, and a remote client's). The zero value is ready to use.
type OutputFeed struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(Output)
}

// Subscribe adds fn; the returned func removes it.
func (f *OutputFeed) Subscribe(fn func(Output)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func(Output){}
	}
	id := f.next
	f.next++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}

// Publish calls every subscriber with o.
func (f *OutputFeed) Publish(o Output) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, fn := range f.subs {
		fn(o)
	}
}
