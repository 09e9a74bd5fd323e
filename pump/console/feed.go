package console

import "sync"

// feed fans Output out to subscribers; it is what a Backend's Subscribe
// needs. The zero value is ready to use.
type feed struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(Output)
}

// Subscribe adds fn; the returned func removes it.
func (f *feed) Subscribe(fn func(Output)) (cancel func()) {
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

// publish calls every subscriber with o.
func (f *feed) publish(o Output) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, fn := range f.subs {
		fn(o)
	}
}
