package mcp

import (
	"net"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionOwners remembers which client host opened each streamable HTTP
// session, to bound the sessions open from one host
// (Options.MaxSessionsPerAddr).
type sessionOwners struct {
	// max is the bound (negative: none).
	max int

	mu sync.Mutex
	// hosts maps a session id to the host that opened it.
	hosts map[string]string
	// opening counts each host's requests without a session being served:
	// each may open one.
	opening map[string]int
}

func newSessionOwners(maxPerHost int) *sessionOwners {
	return &sessionOwners{max: maxPerHost, hosts: map[string]string{}, opening: map[string]int{}}
}

// remoteHost is the host of r's remote address, its port left out: one
// client's connections count together.
func remoteHost(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// admit reserves room for a session from host, unless host has max
// sessions open or being opened already (false). Sessions server no longer
// holds (closed by DELETE, idle, or at Close) are forgotten first. An
// admitted request ends with opened.
func (o *sessionOwners) admit(host string, server *sdk.Server) bool {
	if o.max < 0 {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	live := make(map[string]bool, len(o.hosts))
	for ss := range server.Sessions() {
		live[ss.ID()] = true
	}
	n := o.opening[host]
	for id, h := range o.hosts {
		switch {
		case !live[id]:
			delete(o.hosts, id)
		case h == host:
			n++
		}
	}
	if n >= o.max {
		return false
	}
	o.opening[host]++
	return true
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
		o.hosts[session] = host
	}
}
