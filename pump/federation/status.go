package federation

import (
	"sync"
	"time"
)

// Link states of GatewayStatus.State.
const (
	// LinkUp: the link is up and authenticated.
	LinkUp = "up"
	// LinkDown: no link, and none being made (waiting to dial again, or
	// for the peer to dial in).
	LinkDown = "down"
	// LinkConnecting: no link yet, this side is dialing the peer.
	LinkConnecting = "connecting"
)

// GatewayStatus describes one gateway for consoles, APIs and the dashboard.
type GatewayStatus struct {
	Name      string
	RemoteURL string
	// Connected reports a live, authenticated link; Peer names the peer
	// organism then.
	Connected bool
	Peer      string
	// State is LinkUp, LinkDown or LinkConnecting; Since is when the link
	// last came up (up) or went down (else: when the gateway began, if it
	// never was up).
	State string
	Since time.Time
	// PeerAddress is where the peer is: the URL this side dials, else the
	// address the peer's inbound link comes from ("" while there is none).
	PeerAddress string
	// Queued is how many envelopes wait for the peer's acknowledgement.
	Queued int
	// Open is how many calls wait for the peer's answer.
	Open int
	// Waiting is how many callers (handlers) wait on a call to the peer.
	Waiting int
	// EnvelopesIn and EnvelopesOut count the envelopes accepted from the
	// peer and queued for it since the gateway began (as
	// xmlpipe_gateway_envelopes_total does).
	EnvelopesIn, EnvelopesOut int64
	// Imports are the local listeners standing for the peer's capabilities.
	Imports []string
	Exports []string
	// LastError says why the link is down while it is: how the last dial
	// failed (the peer unreachable, the handshake refused) or how the last
	// link ended ("" while the link is up, or before anything was tried).
	LastError string
}

// Status describes every gateway.
func (m *Manager) Status() []GatewayStatus {
	gs := m.list()
	out := make([]GatewayStatus, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		s := GatewayStatus{Name: g.name, RemoteURL: g.remoteURL(), Connected: g.conn != nil, Queued: len(g.outbox),
			Open: len(g.pending), Waiting: g.waiting, Exports: append([]string(nil), g.offer().exportList...),
			EnvelopesIn: g.envIn.Load(), EnvelopesOut: g.envOut.Load(), PeerAddress: g.remoteURL()}
		s.State, s.Since, s.LastError = g.down.get(g.conn != nil)
		if g.conn != nil {
			s.Peer = g.conn.peer.organism
			if s.PeerAddress == "" {
				s.PeerAddress = g.conn.ws.RemoteAddr().String()
			}
		}
		for name := range g.registered {
			s.Imports = append(s.Imports, name)
		}
		g.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// linkDown keeps the state of a gateway's link for Status: why it is down
// (an operator reads there whether the peer is unreachable or refuses the
// link), since when it is up or down, and whether a dial is under way.
type linkDown struct {
	mu      sync.Mutex
	why     string
	up      bool
	dialing bool
	since   time.Time
}

// begin records when the gateway began (down since then).
func (d *linkDown) begin(now time.Time) {
	d.mu.Lock()
	d.since = now
	d.mu.Unlock()
}

// dial records that a dial begins.
func (d *linkDown) dial() {
	d.mu.Lock()
	d.dialing = true
	d.mu.Unlock()
}

// set records err as why the link is down (nil: a dial succeeded, the
// link is about to be served).
func (d *linkDown) set(err error, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dialing = false
	if err == nil {
		return
	}
	d.why = err.Error()
	if d.up {
		d.up, d.since = false, now
	}
}

// clear records that a link is up.
func (d *linkDown) clear(now time.Time) {
	d.mu.Lock()
	d.why, d.dialing = "", false
	if !d.up {
		d.up, d.since = true, now
	}
	d.mu.Unlock()
}

// get is the link's state, since when, and why it is down ("" when up or
// nothing recorded it); connected says a link is there (a link made at
// start, before Start serves it, is up too).
func (d *linkDown) get(connected bool) (state string, since time.Time, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case connected:
		return LinkUp, d.since, ""
	case d.dialing:
		return LinkConnecting, d.since, d.why
	}
	return LinkDown, d.since, d.why
}

// linkStats accumulates the round-trip times of answered calls.
type linkStats struct {
	mu    sync.Mutex
	n     int64
	total time.Duration
}

// observe records one answered call's round trip.
func (m *Manager) observe(gateway string, d time.Duration) {
	m.stats.mu.Lock()
	m.stats.n++
	m.stats.total += d
	m.stats.mu.Unlock()
	if o := m.opts.Observer; o != nil {
		o.RoundTrip(gateway, d)
	}
}

// RoundTrips reports how many calls were answered and their mean round trip.
func (m *Manager) RoundTrips() (n int64, mean time.Duration) {
	m.stats.mu.Lock()
	defer m.stats.mu.Unlock()
	if m.stats.n == 0 {
		return 0, 0
	}
	return m.stats.n, m.stats.total / time.Duration(m.stats.n)
}

// StateCommits reports how many commits carried federation state writes
// since New. With a store they are the store's own group commits, shared
// with the journal (counted in its Stats().Commits too), not commits of
// their own; in memory, the state's transactions. xmlpipe bench
// --federation reports it per envelope.
func (m *Manager) StateCommits() int64 { return m.db.b.commits() }
