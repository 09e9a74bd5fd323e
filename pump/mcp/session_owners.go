package mcp

import (
	"net"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionOwners remembers which client host opened each streamable HTTP
// session, and when each was last in use, to bound the sessions open from
// one host (Options.MaxSessionsPerAddr).
type sessionOwners struct {
	// max is the bound (negative: none).
	max int

	mu sync.Mutex
	// sessions maps a session id to what is known of it.
	sessions map[string]*ownedSession
	// opening counts each host's requests without a session being served:
	// each may open one.
	opening map[string]int
}

// ownedSession is one session's host and use.
type ownedSession struct {
	host string
	// serving counts its requests being served (a call, a standalone
	// stream): while one is, the session is in use.
	serving int
	// used is when its last request began or ended (or it opened).
	used time.Time
}

func newSessionOwners(maxPerHost int) *sessionOwners {
	return &sessionOwners{max: maxPerHost, sessions: map[string]*ownedSession{}, opening: map[string]int{}}
}

// remoteHost is the host of r's remote address, its port left out: one
// client's connections count together.
func remoteHost(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// admit reserves room for a session from host. Sessions server no longer
// holds (closed by DELETE, idle, or at Close) are forgotten first. When
// host has max sessions open or being opened, the one of its sessions in
// use least recently and not in use now is given up to make room: admit
// returns its id (to close), so that a client that closes its sessions
// without a DELETE (the TypeScript SDK's does) is not locked out until
// they time out. With every one of them in use, admit refuses (false). An
// admitted request ends with opened.
func (o *sessionOwners) admit(host string, server *sdk.Server) (evict string, ok bool) {
	if o.max < 0 {
		return "", true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	live := make(map[string]bool, len(o.sessions))
	for ss := range server.Sessions() {
		live[ss.ID()] = true
	}
	n := o.opening[host]
	var idle *ownedSession
	for id, s := range o.sessions {
		switch {
		case !live[id]:
			delete(o.sessions, id)
		case s.host == host:
			n++
			if s.serving == 0 && (idle == nil || s.used.Before(idle.used) ||
				s.used.Equal(idle.used) && id < evict) {
				idle, evict = s, id
			}
		}
	}
	if n >= o.max {
		if idle == nil {
			return "", false
		}
		delete(o.sessions, evict)
	} else {
		evict = ""
	}
	o.opening[host]++
	return evict, true
}

// opened ends host's reservation (admit); session is the id of the session
// the request opened ("": none).
func (o *sessionOwners) opened(host, session string) {
	if o.max < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.opening[host]--; o.opening[host] <= 0 {
		delete(o.opening, host)
	}
	if session != "" {
		o.sessions[session] = &ownedSession{host: host, used: time.Now()}
	}
}

// enter counts a request of session being served, until the returned
// function runs; a session not known (not opened here, or given up) is
// not counted.
func (o *sessionOwners) enter(session string) (leave func()) {
	if o.max < 0 || session == "" {
		return func() {}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.sessions[session]
	if !ok {
		return func() {}
	}
	s.serving++
	s.used = time.Now()
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		s.serving--
		s.used = time.Now()
	}
}
