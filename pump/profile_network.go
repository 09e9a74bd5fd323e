package pump

import (
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// NetworkWidened names the first profile of pinned — a thread's profile
// as its routing snapshot resolved it (Metadata.Profile), narrowed by the
// definitions in force when its conversation began — whose network
// allow-list the routing table in force now widens: an address its
// definition allows now that it did not allow when the thread's
// conversation began (a reload). "" when there is none, or pinned is nil
// or was not resolved by this pump. A conversation begun now under a
// profile holding those terms (a call's callee) would dial what the
// pinned thread may not (seed 000 §8.5: no runtime change of a thread's
// profile).
func (p *Pump) NetworkWidened(pinned xmlpipe.Profile) string {
	pr, ok := pinned.(*profile)
	if !ok || pr == nil {
		return ""
	}
	now := p.routes.Load()
	if now == pr.tbl && pr.era == nil {
		return ""
	}
	for _, term := range registry.ProfileTerms(pr.name) {
		if !networkWithin(now.profiles[term], pr.tbl.profiles[term]) {
			return term
		}
		if pr.era != nil && !networkWithin(now.profiles[term], pr.era.profiles[term]) {
			return term
		}
	}
	return ""
}

// networkWithin reports whether every address definition now allows was
// allowed by definition was. A nil definition is an undefined profile,
// which dials nothing; a nil network is no restriction.
func networkWithin(now, was *profileDef) bool {
	switch {
	case now == nil:
		return true
	case was == nil:
		return now.network != nil && len(now.network) == 0
	case was.network == nil:
		return true
	case now.network == nil:
		return false
	}
	for _, n := range now.network {
		if !slices.ContainsFunc(was.network, func(w netRule) bool { return w.covers(n) }) {
			return false
		}
	}
	return true
}

// covers reports whether r allows every address n allows.
func (r netRule) covers(n netRule) bool {
	if r.port != "*" && r.port != n.port {
		return false
	}
	switch {
	case r.host == "*":
		return true
	case n.host == "*":
		return false
	case strings.HasPrefix(r.host, "*."):
		return strings.HasSuffix(n.host, r.host[1:]) // *.a.example.com, b.example.com under *.example.com
	case strings.HasPrefix(n.host, "*."):
		return false
	}
	return r.allows(n.host, n.port)
}
