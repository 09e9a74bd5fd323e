package pump

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Security profiles (seed 000 §4, §5.5, §8.4, §8.5).
//
// A profile names the listeners its threads reach: its dispatch table. The
// pump holds the definitions in the routing snapshot (SetProfiles), so a
// conversation routes within the definitions it started with — a reload
// never changes them under it. Every thread carries a profile name, fixed
// when the thread is created (registry.Threads keeps it): a conversation's
// root gets the profile of the party that began it (Principal.Profile,
// WithProfile), a child its parent's narrowed by the sending listener's own
// (Listener.Profile) — never wider (registry.NarrowProfile). A message for a
// listener outside its thread's profile fails at routing exactly as a
// message for a listener that does not exist: there is no route.
//
// The organism's own listeners (system.*, core.*) are in every profile;
// an answer travelling back to its caller and a listener's message to
// itself are not routing decisions and are never masked.

// ErrBadProfile reports a profile definition SetProfiles refuses.
var ErrBadProfile = errors.New("invalid profile")

// ProfileDef is one profile as the pump enforces it.
type ProfileDef struct {
	// Name is the profile's name (registry.ValidProfileTerm; what a
	// configuration names is registry.ValidProfileName).
	Name string
	// Listeners are the listeners its threads reach: names, compared
	// case-insensitively, or path.Match globs ("files-*", "*").
	Listeners []string
	// Network lists the addresses ("host:port") a handler on its threads
	// may dial: host is a name, an IP, "*" or "*.domain" (the domain's
	// subdomains); port a number or "*". nil: no restriction; empty: none.
	Network []string
}

// validate reports a definition that cannot work.
func (d ProfileDef) validate() error {
	if !registry.ValidProfileTerm(d.Name) {
		return fmt.Errorf("%w: name %q: want lower case, no '&', no spaces", ErrBadProfile, d.Name)
	}
	for _, l := range d.Listeners {
		if _, err := path.Match(strings.ToLower(l), ""); err != nil || strings.TrimSpace(l) == "" {
			return fmt.Errorf("%w: %s: listener pattern %q is malformed", ErrBadProfile, d.Name, l)
		}
	}
	for _, a := range d.Network {
		if _, err := parseNetRule(a); err != nil {
			return fmt.Errorf("%w: %s: network %q: %w", ErrBadProfile, d.Name, a, err)
		}
	}
	return nil
}

// profileDef is a validated definition, compiled.
type profileDef struct {
	exact    map[string]bool // lower-cased names
	patterns []string        // lower-cased globs
	network  []netRule       // nil: unrestricted
}

// matches reports whether the definition names listener l.
func (d *profileDef) matches(l *listener) bool {
	n := lower(l.Name)
	if d.exact[n] {
		return true
	}
	for _, p := range d.patterns {
		if ok, _ := path.Match(p, n); ok {
			return true
		}
	}
	return false
}

// compileProfiles validates and compiles defs (nil for none).
func compileProfiles(defs []ProfileDef) (map[string]*profileDef, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	out := make(map[string]*profileDef, len(defs))
	for _, d := range defs {
		if err := d.validate(); err != nil {
			return nil, err
		}
		if out[d.Name] != nil {
			return nil, fmt.Errorf("%w: %q defined twice", ErrBadProfile, d.Name)
		}
		c := &profileDef{exact: map[string]bool{}}
		for _, l := range d.Listeners {
			l = lower(strings.TrimSpace(l))
			if strings.ContainsAny(l, `*?[\`) {
				c.patterns = append(c.patterns, l)
			} else {
				c.exact[l] = true
			}
		}
		if d.Network != nil {
			c.network = make([]netRule, 0, len(d.Network))
			for _, a := range d.Network {
				r, _ := parseNetRule(a)
				c.network = append(c.network, r)
			}
		}
		out[d.Name] = c
	}
	return out, nil
}

// SetProfiles installs the profile definitions conversations begun from now
// on route within (nil or empty: none). Conversations in flight keep the
// definitions they began with. A profile a thread names that is not defined
// reaches none of the organism's listeners but its own (fail closed).
func (p *Pump) SetProfiles(defs []ProfileDef) error {
	compiled, err := compileProfiles(defs)
	if err != nil {
		return err
	}
	return p.editRoutes(func(t *table) (*table, error) {
		n := t.copyWith(func(*listener) bool { return true }, nil)
		n.profiles, n.profileSrc = compiled, slices.Clone(defs)
		return n, nil
	})
}

// profile is a profile (or an intersection of several) resolved within one
// routing snapshot: the listeners of that snapshot it reaches. It is
// immutable; the snapshot caches it (table.profile). A nil *profile is no
// profile: it reaches everything.
type profile struct {
	name  string
	tbl   *table
	allow map[*listener]struct{}
	// network holds each term's rules (a term without rules is left out);
	// an address must pass every one. nil: unrestricted.
	network [][]netRule
	// peersets caches agents' peer sets seen through this profile
	// (*peerSet → *peerSet).
	peersets sync.Map
	// era, when set, is the older era of the profiles this one is
	// narrowed by: its thread's conversation began then (profile_era.go).
	era *profileEra
}

// reaches reports whether a message under pr may reach l: l is one of the
// organism's own listeners or in pr's table.
func (pr *profile) reaches(l *listener) bool {
	if pr == nil || l.system {
		return true
	}
	_, ok := pr.allow[l]
	return ok
}

// Name implements xmlpipe.Profile.
func (pr *profile) Name() string { return pr.name }

// Reaches implements xmlpipe.Profile.
func (pr *profile) Reaches(name string) bool {
	l := pr.tbl.lookup(name)
	return l != nil && pr.reaches(l)
}

// MayDial implements xmlpipe.Profile.
func (pr *profile) MayDial(hostport string) bool {
	if pr == nil {
		return true
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	for _, rules := range pr.network {
		if !slices.ContainsFunc(rules, func(r netRule) bool { return r.allows(host, port) }) {
			return false
		}
	}
	return true
}

// nameOf is pr's name, "" for none.
func (pr *profile) nameOf() string {
	if pr == nil {
		return ""
	}
	return pr.name
}

// profile resolves the profile called name (a registry profile name: one
// or more terms joined by "&") in t; nil for "". The result is cached.
func (t *table) profile(name string) *profile {
	if name == "" {
		return nil
	}
	if v, ok := t.resolved.Load(name); ok {
		return v.(*profile)
	}
	terms := registry.ProfileTerms(name)
	defs := make([]*profileDef, len(terms))
	pr := &profile{name: registry.NarrowProfile(name, ""), tbl: t, allow: map[*listener]struct{}{}}
	for i, term := range terms {
		defs[i] = t.profiles[term] // nil: not defined, reaches nothing
		if defs[i] != nil && defs[i].network != nil {
			pr.network = append(pr.network, defs[i].network)
		}
		if defs[i] == nil {
			pr.network = append(pr.network, []netRule{}) // and dials nothing
		}
	}
	for _, l := range t.order {
		ok := true
		for _, d := range defs {
			if d == nil || !d.matches(l) {
				ok = false
				break
			}
		}
		if ok {
			pr.allow[l] = struct{}{}
		}
	}
	v, _ := t.resolved.LoadOrStore(name, pr)
	return v.(*profile)
}

// profiled reports whether t defines profiles.
func (t *table) profiled() bool { return t.profiles != nil }

// mask returns the targets pr reaches (targets itself when it reaches them
// all); none reached is the routing stage's no-route failure, word for word
// the one a message for a listener that does not exist gets (to names the
// listener addressed, "" for a message routed by its root tag key). sender,
// when set, always reaches itself.
func (pr *profile) mask(targets []*listener, sender *listener, to string, key tagKey) ([]*listener, error) {
	n := 0
	for _, l := range targets {
		if l == sender || pr.reaches(l) {
			n++
		}
	}
	switch {
	case n == len(targets):
		return targets, nil
	case n == 0:
		if to != "" {
			return nil, noRoute(fmt.Sprintf("no listener named %q", to))
		}
		return nil, noRoute(fmt.Sprintf("no listener for <%s>", key))
	}
	out := make([]*listener, 0, n)
	for _, l := range targets {
		if l == sender || pr.reaches(l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// netRule is one network entry: a host pattern and a port.
type netRule struct {
	host string // lower-cased: a name or IP, "*", or "*.domain"
	port string // a number or "*"
}

// CheckNetworkRule reports whether s is a valid network entry of a
// profile: "host:port", host a name, an IP, "*" or "*.domain", port a
// number or "*".
func CheckNetworkRule(s string) error {
	_, err := parseNetRule(s)
	return err
}

// parseNetRule reads "host:port".
func parseNetRule(s string) (netRule, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s))
	if err != nil {
		return netRule{}, fmt.Errorf("want host:port: %w", err)
	}
	if host == "" {
		return netRule{}, errors.New("empty host")
	}
	if port != "*" {
		if n, err := net.LookupPort("tcp", port); err != nil || n <= 0 || port != fmt.Sprint(n) {
			return netRule{}, fmt.Errorf("port %q: want a number or *", port)
		}
	}
	h := strings.ToLower(host)
	if strings.Contains(h[min(1, len(h)):], "*") || strings.HasPrefix(h, "*") && h != "*" && !strings.HasPrefix(h, "*.") {
		return netRule{}, fmt.Errorf("host %q: a wildcard stands alone or starts *.domain", host)
	}
	return netRule{host: h, port: port}, nil
}

// allows reports whether r allows host:port.
func (r netRule) allows(host, port string) bool {
	if r.port != "*" && r.port != port {
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case r.host == "*":
		return true
	case strings.HasPrefix(r.host, "*."):
		return strings.HasSuffix(h, r.host[1:])
	}
	if ip := net.ParseIP(h); ip != nil {
		rip := net.ParseIP(r.host)
		return rip != nil && rip.Equal(ip)
	}
	return h == r.host
}

// WithProfile returns ctx carrying a profile for the external messages
// injected with it (Inject, InjectWait, Send, Ask): a conversation they
// begin has that profile (the intersection with the principal's, for
// InjectAs). "" returns ctx.
func WithProfile(ctx context.Context, profile string) context.Context {
	if profile == "" {
		return ctx
	}
	return context.WithValue(ctx, profileCtxKey{}, profile)
}

// profileCtxKey carries WithProfile's profile.
type profileCtxKey struct{}

// profileOf is the profile an injection asks for: WithProfile's narrowed
// by the principal's.
func profileOf(ctx context.Context, who *Principal) string {
	want, _ := ctx.Value(profileCtxKey{}).(string)
	if who != nil && who.Profile != "" {
		want = registry.NarrowProfile(want, who.Profile)
	}
	return want
}

// ProfileReaches reports whether a message under the profile called name
// (one, or several joined by "&") reaches listener in the current routing
// table; "" reaches every listener there is.
func (p *Pump) ProfileReaches(name, listener string) bool {
	t := p.routes.Load()
	l := t.lookup(listener)
	return l != nil && t.profile(name).reaches(l)
}

// ProfileDefined reports whether the current routing table defines every
// profile name holds ("" always is).
func (p *Pump) ProfileDefined(name string) bool {
	t := p.routes.Load()
	for _, term := range registry.ProfileTerms(name) {
		if t.profiles[term] == nil {
			return false
		}
	}
	return true
}

// Profile returns the profile called name resolved in the current routing
// table, as handlers see one (nil for "").
func (p *Pump) Profile(name string) xmlpipe.Profile {
	if pr := p.routes.Load().profile(name); pr != nil {
		return pr
	}
	return nil
}

var _ xmlpipe.Profile = (*profile)(nil)

// reach is the profile the messages l sends while handling d travel under:
// d's thread's, narrowed by l's own (nil: none).
func (d *delivery) reach(l *listener) *profile {
	if l.Profile == "" {
		return d.prof
	}
	return d.tbl.profileAt(registry.NarrowProfile(d.prof.nameOf(), l.Profile), d.prof.eraOf())
}

// extend opens the child thread of d's for a message l sends to to (with
// correlation ref ref): its profile is d's narrowed by l's (see reach). It
// returns the child and its profile resolved in d's snapshot, and whether
// d's thread is now spent: the forward of a listener that is no agent marks
// it (registry.Threads.ForwardAs); an agent's thread keeps its history and
// waits for its answers, so its forwards never spend it (only a failure of
// its handler does: tellFailure).
func (p *Pump) extend(d *delivery, l *listener, to, ref string) (string, *profile, bool, error) {
	want := ""
	if d.prof != nil || l.Profile != "" {
		want = registry.NarrowProfile(d.prof.nameOf(), l.Profile)
	}
	var child, name string
	var spent bool
	var err error
	if l.Agent {
		child, name, err = p.threads.ExtendAs(d.thread, to, ref, want)
	} else {
		child, name, spent, err = p.threads.ForwardAs(d.thread, to, ref, want)
	}
	if err != nil {
		return "", nil, false, err
	}
	if d.prof == nil && l.Profile == "" {
		return child, nil, spent, nil // the child inherits the thread's (none, or a pinned one)
	}
	return child, d.tbl.profileAt(name, d.prof.eraOf()), spent, nil
}

// peerSet returns agent l's peer set ps as seen under pr: a peer pr does
// not reach is given as one that does not exist (its name alone), in the
// peers and in the usage instructions. Cached per peer set.
func (pr *profile) peerSet(l *listener, ps *peerSet) *peerSet {
	if v, ok := pr.peersets.Load(ps); ok {
		return v.(*peerSet)
	}
	next := newPeerSet(ps.names)
	var described []gen.Peer
	next.peers, described = peersIn(pr.tbl, ps.names, pr)
	next.usage = gen.UsageInstructions(l.Name, l.Description, described)
	v, _ := pr.peersets.LoadOrStore(ps, next)
	return v.(*peerSet)
}
