package federation

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Bounds of the inbound handshakes (handshakeGate).
const (
	// MaxHandshakes bounds the inbound links handshaking at once.
	MaxHandshakes = 64
	// MaxHandshakesPerSource bounds those from one source: an IPv4
	// address, or an IPv6 /64 (one host's usual share).
	MaxHandshakesPerSource = 4
)

// Admission refusals.
var (
	// errSourceBusy: the source has MaxHandshakesPerSource handshakes
	// under way, none of which can be cut off.
	errSourceBusy = errors.New("too many handshakes from this address")
	// errHandshakesBusy: MaxHandshakes handshakes are under way, none of
	// which can be cut off.
	errHandshakesBusy = errors.New("too many handshakes at once")
)

// handshakeGate admits inbound links to the identity handshake, which is
// unauthenticated until the dialer's proof verifies: at most max at once
// and at most perSource from one source, so one address cannot hold every
// slot. When a bound is reached the oldest admitted handshake (of that
// source, or of any) that has not yet said hello is cut off to make room:
// a peer says hello as soon as its link is upgraded, so what waits without
// a word is a connection held open to take a slot. Only when every
// handshake in the way has said hello is the newcomer refused; each is
// bounded by handshakeTimeout anyway. A trusted peer thus links during a
// flood of idle connections from its own address or any other.
type handshakeGate struct {
	max, perSource int

	mu       sync.Mutex
	admitted []*admission // oldest first; at most max
	bySource map[string]int
}

// admission is one admitted handshake.
type admission struct {
	gate   *handshakeGate
	source string
	// conn is the link's connection once upgraded (nil before: it cannot
	// be cut off yet); hello is set once the peer said hello; cut once the
	// gate cut it off.
	conn  net.Conn
	hello bool
	cut   bool
}

// newHandshakeGate returns a gate of the given bounds.
func newHandshakeGate(max, perSource int) *handshakeGate {
	return &handshakeGate{max: max, perSource: perSource, bySource: map[string]int{}}
}

// sourceOf is the source a remote address counts against: the IPv4
// address, or the /64 of an IPv6 one; the address as given when it does
// not parse.
func sourceOf(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// admit admits a handshake from remote (an address:port), cutting off an
// older idle one when a bound is reached; errSourceBusy or
// errHandshakesBusy when it cannot. cut reports how many were cut off.
func (g *handshakeGate) admit(remote string) (a *admission, cut int, err error) {
	source := sourceOf(remote)
	var victims []net.Conn
	defer func() {
		for _, c := range victims {
			// Deadlines, not Close: they unblock the handshake's read or
			// write at once without a TLS alert that could block here; the
			// handshake's error path closes the connection.
			_ = c.SetDeadline(time.Now())
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.bySource[source] >= g.perSource {
		v := g.evict(func(o *admission) bool { return o.source == source })
		if v == nil {
			return nil, 0, errSourceBusy
		}
		victims = append(victims, v)
	}
	if len(g.admitted) >= g.max {
		v := g.evict(func(*admission) bool { return true })
		if v == nil {
			return nil, len(victims), errHandshakesBusy
		}
		victims = append(victims, v)
	}
	a = &admission{gate: g, source: source}
	g.admitted = append(g.admitted, a)
	g.bySource[source]++
	return a, len(victims), nil
}

// evict removes the oldest matching admission that is upgraded and has not
// said hello, marks it cut and returns its connection (nil: none). The
// caller holds mu.
func (g *handshakeGate) evict(match func(*admission) bool) net.Conn {
	for _, o := range g.admitted {
		if o.conn != nil && !o.hello && match(o) {
			g.remove(o)
			o.cut = true
			return o.conn
		}
	}
	return nil
}

// remove forgets a. The caller holds mu.
func (g *handshakeGate) remove(a *admission) {
	for i, o := range g.admitted {
		if o == a {
			g.admitted = append(g.admitted[:i], g.admitted[i+1:]...)
			if g.bySource[a.source]--; g.bySource[a.source] <= 0 {
				delete(g.bySource, a.source)
			}
			return
		}
	}
}

// upgraded records a's connection; false when a was cut off meanwhile.
func (a *admission) upgraded(c net.Conn) bool {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	if a.cut {
		return false
	}
	a.conn = c
	return true
}

// saidHello records that the peer said hello: it can no longer be cut off.
func (a *admission) saidHello() {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	a.hello = true
}

// wasCut reports whether the gate cut a off.
func (a *admission) wasCut() bool {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	return a.cut
}

// done releases a's slot (the handshake ended, either way).
func (a *admission) done() {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	if !a.cut {
		a.gate.remove(a)
	}
}

// inFlight is how many handshakes are admitted now.
func (g *handshakeGate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.admitted)
}

// fromSource is how many handshakes from the source of remote (an address,
// with or without a port) are admitted now.
func (g *handshakeGate) fromSource(remote string) int {
	source := remote
	if _, _, err := net.SplitHostPort(remote); err == nil {
		source = sourceOf(remote)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bySource[source]
}
