package federation

import (
	"sync"
	"time"
)

// GatewayStatus describes one gateway for consoles, APIs and the dashboard.
type GatewayStatus struct {
	Name      string
	RemoteURL string
	// Connected reports a live, authenticated link; Peer names the peer
	// organism then.
	Connected bool
	Peer      string
	// Queued is how many envelopes wait for the peer's acknowledgement.
	Queued int
	// Open is how many calls wait for the peer's answer.
	Open int
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
		s := GatewayStatus{Name: g.name, RemoteURL: g.cfg.RemoteURL, Connected: g.conn != nil, Queued: len(g.outbox),
			Open: len(g.pending), Exports: append([]string(nil), g.cfg.Export...)}
		if g.conn != nil {
			s.Peer = g.conn.peer.organism
		} else {
			s.LastError = g.down.get()
		}
		for name := range g.registered {
			s.Imports = append(s.Imports, name)
		}
		g.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// linkDown keeps why a gateway's link is down, for Status: an operator
// reads there whether the peer is unreachable or refuses the link.
type linkDown struct {
	mu  sync.Mutex
	why string
}

// set records err as why the link is down.
func (d *linkDown) set(err error) {
	if err == nil {
		return
	}
	d.mu.Lock()
	d.why = err.Error()
	d.mu.Unlock()
}

// clear records that a link is up.
func (d *linkDown) clear() {
	d.mu.Lock()
	d.why = ""
	d.mu.Unlock()
}

// get is why the link is down ("" when nothing recorded it).
func (d *linkDown) get() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.why
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
