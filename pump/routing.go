package pump

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Registration errors.
var (
	ErrDuplicateName = errors.New("duplicate listener name")
	ErrTagCollision  = errors.New("root tag collision")
	ErrReservedName  = errors.New("reserved listener name")
	ErrBadListener   = errors.New("invalid listener")
)

// reserved names can never be a listener's name nor an external <from>.
var reserved = map[string]bool{"system": true, "core": true}

type tagKey struct{ ns, name string }

func (k tagKey) String() string {
	if k.ns == "" {
		return k.name
	}
	return "{" + k.ns + "}" + k.name
}

// table is one snapshot of the routing table: listeners by lower-cased name
// and by payload root tag. A snapshot is never modified once published: a
// registration or removal builds a new one (with, without) and the pump
// swaps it in, so routing reads it without a lock. Registration rules
// (DESIGN §3): no duplicate names; a root tag is shared only by a broadcast
// group (every sharer broadcast, same payload type); agents never share a
// tag (blind self-iteration needs it unique).
//
// A conversation pins the snapshot it started with and routes every one of
// its messages within it (seed 000 §8.5: the dispatch table of a thread is
// fixed when the thread is created). refs counts the pins, plus one while
// the snapshot is the pump's current one; when it drops to zero the
// snapshot is retired, and a listener no live snapshot holds any more has
// its pipeline closed (its workers drain it and stop).
type table struct {
	byName map[string]*listener
	byTag  map[tagKey][]*listener
	order  []*listener
	refs   atomic.Int64
	// profiles are the profile definitions conversations routing within
	// this snapshot use (nil: none; see profile.go), and resolved caches
	// the profiles resolved in it (name → *profile).
	profiles map[string]*profileDef
	resolved sync.Map
	// profileSrc are the definitions profiles was compiled from.
	profileSrc []ProfileDef
	// eras is the history of the profiles since the pump started, its own
	// last (nil: none changed yet; see profile_era.go).
	eras []*profileEra
}

// newTable returns an empty snapshot holding its "current" reference.
func newTable() *table {
	t := &table{byName: map[string]*listener{}, byTag: map[tagKey][]*listener{}}
	t.refs.Store(1)
	return t
}

// copyWith returns a new snapshot with t's listeners in order, keeping or
// dropping each as keep says; it holds its "current" reference and counts
// itself in every listener it holds.
func (t *table) copyWith(keep func(*listener) bool, extra *listener) *table {
	n := &table{byName: make(map[string]*listener, len(t.byName)+1), byTag: make(map[tagKey][]*listener, len(t.byTag)+1),
		order: make([]*listener, 0, len(t.order)+1), profiles: t.profiles, profileSrc: t.profileSrc}
	n.refs.Store(1)
	for _, l := range t.order {
		if keep(l) {
			n.put(l)
		}
	}
	if extra != nil {
		n.put(extra)
	}
	return n
}

// put adds l to a snapshot being built.
func (t *table) put(l *listener) {
	key := tagKey{l.Payload.Namespace(), l.Payload.Name()}
	t.byName[lower(l.Name)] = l
	t.byTag[key] = append(t.byTag[key], l)
	t.order = append(t.order, l)
	l.tables.Add(1)
}

// with checks l against the registration rules and returns a new snapshot
// holding t's listeners and l. A refusal is a *ChangeError naming l (but
// for a name that is no name at all): its cause never names l again.
func (t *table) with(l *listener, system bool) (*table, error) {
	l.system = system
	name := strings.TrimSpace(l.Name)
	if name == "" || name != l.Name {
		return nil, fmt.Errorf("%w: name %q must be non-empty without surrounding spaces", ErrBadListener, l.Name)
	}
	if err := t.refuses(l, system); err != nil {
		return nil, &ChangeError{Listener: l.Name, Err: err}
	}
	return t.copyWith(func(*listener) bool { return true }, l), nil
}

// refuses reports why the registration rules refuse l in t (nil: they
// admit it), without naming l.
func (t *table) refuses(l *listener, system bool) error {
	name := l.Name
	switch {
	case l.Payload == nil:
		return fmt.Errorf("%w: no payload type", ErrBadListener)
	case l.Handler == nil:
		return fmt.Errorf("%w: no handler", ErrBadListener)
	case handlerMismatch(l.Listener):
		want, _ := xmlpipe.HandlerPayload(l.Handler)
		return fmt.Errorf("%w: its handler takes *%v, its payload type is %v", ErrBadListener, want, l.Payload.GoType())
	case l.MaxMessagesPerTurn < 0:
		return fmt.Errorf("%w: max messages per turn must not be negative", ErrBadListener)
	case !system && (reserved[lower(name)] || strings.HasPrefix(lower(name), "system.")):
		return fmt.Errorf("%w: the name is reserved for the organism", ErrReservedName)
	}
	if o, ok := t.byName[lower(name)]; ok {
		if o.Name == name {
			return fmt.Errorf("%w: already registered", ErrDuplicateName)
		}
		return fmt.Errorf("%w: already registered as %q", ErrDuplicateName, o.Name)
	}
	key := tagKey{l.Payload.Namespace(), l.Payload.Name()}
	for _, o := range t.byTag[key] {
		switch {
		case l.Agent || o.Agent:
			return fmt.Errorf("%w: <%s> is already handled by %s; agents need a unique root tag for self-iteration",
				ErrTagCollision, key, o.Name)
		case !l.Broadcast || !o.Broadcast:
			return fmt.Errorf("%w: <%s> is already handled by %s; mark every sharer broadcast: true to fan out",
				ErrTagCollision, key, o.Name)
		case o.Payload.GoType() != l.Payload.GoType():
			return fmt.Errorf("%w: broadcast group <%s> of %s mixes payload types %v and %v",
				ErrTagCollision, key, o.Name, o.Payload.GoType(), l.Payload.GoType())
		}
	}
	return nil
}

// without returns a new snapshot holding t's listeners but the one called
// name, and that listener. The organism's own listeners cannot be removed.
func (t *table) without(name string) (*table, *listener, error) {
	l := t.byName[lower(name)]
	switch {
	case l == nil:
		return nil, nil, fmt.Errorf("%w: %s", ErrUnknownListener, name)
	case l.system || strings.HasPrefix(lower(l.Name), "system."):
		return nil, nil, fmt.Errorf("%w: %q belongs to the organism", ErrReservedName, l.Name)
	}
	return t.copyWith(func(o *listener) bool { return o != l }, nil), l, nil
}

// pin adds a reference to t unless it was retired (reports false then).
func (t *table) pin() bool {
	for {
		n := t.refs.Load()
		if n <= 0 {
			return false
		}
		if t.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// pinRoutes returns the current routing snapshot, pinned: the caller hands
// the reference to a conversation (convStart) or drops it (unpinTable).
func (p *Pump) pinRoutes() *table {
	for {
		if t := p.routes.Load(); t.pin() {
			return t
		}
		// retired between the load and the pin: a newer one is current
	}
}

// unpinTable drops a reference to t; the last one retires it, closing the
// pipelines of the listeners no live snapshot holds any more.
func (p *Pump) unpinTable(t *table) {
	if t.refs.Add(-1) != 0 {
		return
	}
	for _, l := range t.order {
		if l.tables.Add(-1) == 0 {
			p.retireListener(l)
		}
	}
}

// editRoutes replaces the current snapshot by edit's result (one writer at
// a time) and drops the old snapshot's "current" reference.
func (p *Pump) editRoutes(edit func(*table) (*table, error)) error {
	p.routesMu.Lock()
	old := p.routes.Load()
	nt, err := edit(old)
	if err != nil {
		p.routesMu.Unlock()
		return err
	}
	p.withEra(old, nt)
	p.routes.Store(nt)
	p.routesVersion.Add(1)
	close(p.routesChanged)
	p.routesChanged = make(chan struct{})
	p.routesMu.Unlock()
	p.unpinTable(old)
	return nil
}

// RoutesVersion identifies the current routing table: it changes whenever
// a listener is registered, added, removed or replaced (a reload, an OOB
// registration, a federation import), so a cache derived from the table —
// the semantic router's index — knows when to rebuild.
func (p *Pump) RoutesVersion() uint64 { return p.routesVersion.Load() }

// RoutesChanged returns a channel closed when the routing table next
// changes, for a view of the table that must follow it as it happens (the
// MCP server's tool list). Take the channel before reading the table, so a
// change between the two is not missed.
func (p *Pump) RoutesChanged() <-chan struct{} {
	p.routesMu.Lock()
	defer p.routesMu.Unlock()
	return p.routesChanged
}

// lookup returns the listener named name (case-insensitive, as Python).
func (t *table) lookup(name string) *listener {
	return t.byName[lower(name)]
}

// resolve returns the targets of a payload: with to, the listener of that name
// whose root tag matches; without, every listener of the tag.
func (t *table) resolve(to, ns, name string) ([]*listener, error) {
	key := tagKey{ns, name}
	if to != "" {
		l := t.byName[lower(to)]
		if l == nil {
			return nil, noRoute(fmt.Sprintf("no listener named %q", to))
		}
		if !l.Payload.Matches(name, ns) {
			return nil, noRoute(fmt.Sprintf("%s takes <%s>, not <%s>", l.Name,
				tagKey{l.Payload.Namespace(), l.Payload.Name()}, key))
		}
		return l.only, nil
	}
	ls := t.byTag[key]
	if len(ls) == 0 {
		return nil, noRoute(fmt.Sprintf("no listener for <%s>", key))
	}
	return ls, nil
}

// noRoute is the routing stage's *failure.Failure; the detail (which names
// the topology) goes to the diagnostics only.
func noRoute(detail string) error {
	return &failure.Failure{Stage: failure.StageRoute, Err: failure.ErrNoRoute,
		Diagnostics: []failure.Diagnostic{{Stage: failure.StageRoute, Msg: detail}}}
}

// all returns the listeners in registration order.
func (t *table) all() []*listener {
	return append([]*listener(nil), t.order...)
}

// Route is one row of the routing table, for display.
type Route struct {
	Tag       string
	Listeners []string
	Broadcast bool
}

// Routes returns the routing table sorted by tag.
func (t *table) routes() []Route {
	out := make([]Route, 0, len(t.byTag))
	for k, ls := range t.byTag {
		r := Route{Tag: k.String(), Broadcast: len(ls) > 1}
		for _, l := range ls {
			r.Listeners = append(r.Listeners, l.Name)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out
}

// handlerMismatch reports a listener whose handler says it takes another
// payload type than the listener's (xmlpipe.HandlerPayload): every message
// would fail in it.
func handlerMismatch(l Listener) bool {
	want, ok := xmlpipe.HandlerPayload(l.Handler)
	return ok && l.Payload.GoType() != nil && want != l.Payload.GoType()
}
