package registry

import (
	"errors"
	"math"
)

// MaxEnteredHops is the most hops a conversation may have made before it
// enters the registry (JoinAsAt). A peer organism's call claiming more is
// refused long before: an organism's max_chain_depth is far lower.
const MaxEnteredHops = math.MaxUint16

// ErrBadHops is returned for a hop count that is negative or above
// MaxEnteredHops.
var ErrBadHops = errors.New("hop count out of range")

// JoinAsAt is JoinAs for a message whose conversation made hops hops
// elsewhere before it reached this registry — a call from a peer
// organism, whose chain of forwards goes on here. A new conversation's
// root keeps hops (persisted as ThreadRecord.Hops) and every thread
// extended from it has the same, so Hops counts the chain across
// organisms; a live thread keeps its own. A hops outside 0 to
// MaxEnteredHops is refused (ErrBadHops).
func (t *Threads) JoinAsAt(id, from, target, profile string, hops int) (root string, created bool, threadProfile string, err error) {
	return t.joinAs("join", id, from, target, NarrowProfile("", profile), hops)
}

// Hops returns how many hops the chain of live thread id has made — the
// listeners its path reached ([organism, origin, l1 … lk] → k, a
// broadcast's origin [organism, origin] → 0) plus the hops its
// conversation made before it entered (JoinAsAt) — and whether id is live.
func (t *Threads) Hops(id string) (int, bool) {
	u, err := parseThreadID(id)
	if err != nil {
		return 0, false
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return 0, false
	}
	n := s.slab.at(r)
	return int(n.depth) - 2 + int(n.entered), true
}
