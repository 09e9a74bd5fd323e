package organism

// PeerWaiter is a backend that tells whether a conversation waits on a
// call to a peer organism that cannot be reached: the console does not
// hold its /quit for such a conversation. *Local implements it.
type PeerWaiter interface {
	// HasPeers reports whether a call may wait on a peer organism at all
	// (the organism runs a federation).
	HasPeers() bool
	// WaitsOnUnreachablePeer names the gateway whose unreachable peer a
	// call of conversation conv waits on, if any.
	WaitsOnUnreachablePeer(conv string) (gateway string, ok bool)
}

// WaitsOnUnreachablePeer implements PeerWaiter.
func (l *Local) WaitsOnUnreachablePeer(conv string) (string, bool) {
	if l.org == nil || l.org.Federation == nil {
		return "", false
	}
	return l.org.Federation.WaitsOnUnreachable(conv, l.org.Pump.Threads().Root)
}

// HasPeers implements PeerWaiter.
func (l *Local) HasPeers() bool { return l.org != nil && l.org.Federation != nil }
