package mcp

import (
	"net"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionOwners remembers which client host opened each streamable HTTP
// session, and when each was last in use, to bound the sessions open at
// once (Options.MaxSessions) and from one host (Options.MaxSessionsPerAddr).
type sessionOwners struct {
	// max and maxPerHost are the bounds (negative: none).
	max, maxPerHost int
	// minIdle is how long a session must have been idle to be given up.
	minIdle time.Duration

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

// errBound names the bound an initialize is refused by: errHostBound or
// errTotalBound.
type errBound int

const (
	withinBounds errBound = iota
	errHostBound
	errTotalBound
)

func newSessionOwners(max, maxPerHost int, minIdle time.Duration) *sessionOwners {
	return &sessionOwners{max: max, maxPerHost: maxPerHost, minIdle: minIdle, sessions: map[string]*ownedSession{},
		opening: map[string]int{}}
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
// holds (closed by DELETE, idle, or at Close) are forgotten first. At a
// bound — host has maxPerHost sessions open or being opened, or max are —
// the session within it used least recently, not in use now and idle for
// minIdle at least (of host's own at its bound) is given up to make room: admit returns its id to
// close, so that clients that close their sessions without a DELETE (the
// TypeScript SDK's do) are not locked out until those time out. With
// every one of them in use, admit refuses, naming the bound. An admitted
// request ends with opened.
func (o *sessionOwners) admit(host string, server *sdk.Server) (evict string, refused errBound) {
	o.mu.Lock()
	defer o.mu.Unlock()
	live := map[string]bool{}
	for ss := range server.Sessions() {
		live[ss.ID()] = true
	}
	opening, fromHost := 0, o.opening[host]
	for _, n := range o.opening {
		opening += n
	}
	for id, s := range o.sessions {
		switch {
		case !live[id]:
			delete(o.sessions, id)
		case s.host == host:
			fromHost++
		}
	}
	// A session opened past this bookkeeping (none: every one opens here)
	// counts in the total all the same.
	total := len(live) + opening
	switch {
	case o.maxPerHost >= 0 && fromHost >= o.maxPerHost:
		if evict = o.idlest(host); evict == "" {
			return "", errHostBound
		}
	case o.max >= 0 && total >= o.max:
		if evict = o.idlest(""); evict == "" {
			return "", errTotalBound
		}
	}
	if evict != "" {
		delete(o.sessions, evict)
	}
	o.opening[host]++
	return evict, withinBounds
}

// idlest returns the session (of host; "": of any) used least recently of
// those not in use now and idle for minIdle at least, or "".
func (o *sessionOwners) idlest(host string) string {
	var (
		id   string
		idle *ownedSession
	)
	now := time.Now()
	for sid, s := range o.sessions {
		if s.serving > 0 || host != "" && s.host != host || now.Sub(s.used) < o.minIdle {
			continue
		}
		if idle == nil || s.used.Before(idle.used) || s.used.Equal(idle.used) && sid < id {
			id, idle = sid, s
		}
	}
	return id
}

// opened ends host's reservation (admit); session is the id of the session
// the request opened ("": none).
func (o *sessionOwners) opened(host, session string) {
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
	if session == "" {
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
