package bus

import "sync"

// socketSet is the set of open sockets of one kind that the server offers
// what happens in the organism to (the /api/v1/ws event streams, the
// /api/v1/ws/messages log streams). each may run inside the pump's publish
// call: what it calls must never block.
type socketSet[S comparable] struct {
	mu  sync.RWMutex
	set map[S]struct{}
}

func newSocketSet[S comparable]() *socketSet[S] {
	return &socketSet[S]{set: map[S]struct{}{}}
}

func (ss *socketSet[S]) add(s S) {
	ss.mu.Lock()
	ss.set[s] = struct{}{}
	ss.mu.Unlock()
}

func (ss *socketSet[S]) remove(s S) {
	ss.mu.Lock()
	delete(ss.set, s)
	ss.mu.Unlock()
}

// empty reports whether no socket is open.
func (ss *socketSet[S]) empty() bool {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return len(ss.set) == 0
}

// each calls offer for every open socket; a socket is not removed while
// offer runs for it.
func (ss *socketSet[S]) each(offer func(S)) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	for s := range ss.set {
		offer(s)
	}
}
