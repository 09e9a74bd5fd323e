package pump

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
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

// table is the routing table: listeners by lower-cased name and by payload root
// tag. Registration rules (DESIGN §3): no duplicate names; a root tag is shared
// only by a broadcast group (every sharer broadcast, same payload type); agents
// never share a tag (blind self-iteration needs it unique).
type table struct {
	mu     sync.RWMutex
	byName map[string]*listener
	byTag  map[tagKey][]*listener
	order  []*listener
}

func newTable() *table {
	return &table{byName: map[string]*listener{}, byTag: map[tagKey][]*listener{}}
}

func (t *table) add(l *listener, system bool) error {
	l.system = system
	name := strings.TrimSpace(l.Name)
	switch {
	case name == "" || name != l.Name:
		return fmt.Errorf("%w: name %q must be non-empty without surrounding spaces", ErrBadListener, l.Name)
	case l.Payload == nil:
		return fmt.Errorf("%w: %s has no payload type", ErrBadListener, l.Name)
	case l.Handler == nil:
		return fmt.Errorf("%w: %s has no handler", ErrBadListener, l.Name)
	case !system && (reserved[lower(name)] || strings.HasPrefix(lower(name), "system.")):
		return fmt.Errorf("%w: %q is reserved for the organism", ErrReservedName, l.Name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.byName[lower(name)]; ok {
		return fmt.Errorf("%w: %q (already registered as %q)", ErrDuplicateName, l.Name, o.Name)
	}
	key := tagKey{l.Payload.Namespace(), l.Payload.Name()}
	for _, o := range t.byTag[key] {
		switch {
		case l.Agent || o.Agent:
			return fmt.Errorf("%w: %s: %s and %s both handle <%s>; agents need a unique root tag for self-iteration",
				ErrTagCollision, l.Name, o.Name, l.Name, key)
		case !l.Broadcast || !o.Broadcast:
			return fmt.Errorf("%w: %s: <%s> is already handled by %s; mark every sharer broadcast: true to fan out",
				ErrTagCollision, l.Name, key, o.Name)
		case o.Payload.GoType() != l.Payload.GoType():
			return fmt.Errorf("%w: %s: broadcast group <%s> mixes payload types %v and %v",
				ErrTagCollision, l.Name, key, o.Payload.GoType(), l.Payload.GoType())
		}
	}
	t.byName[lower(name)] = l
	t.byTag[key] = append(t.byTag[key], l)
	t.order = append(t.order, l)
	return nil
}

// byNameLookup returns the listener named name (case-insensitive, as Python).
func (t *table) lookup(name string) *listener {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byName[lower(name)]
}

// resolve returns the targets of a payload: with to, the listener of that name
// whose root tag matches; without, every listener of the tag.
func (t *table) resolve(to, ns, name string) ([]*listener, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
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

// noRoute is the routing stage's *xmlpipe.Failure; the detail (which names
// the topology) goes to the diagnostics only.
func noRoute(detail string) error {
	return &xmlpipe.Failure{Stage: xmlpipe.StageRoute, Err: xmlpipe.ErrNoRoute,
		Diagnostics: []xmlpipe.Diagnostic{{Stage: xmlpipe.StageRoute, Msg: detail}}}
}

// all returns the listeners in registration order.
func (t *table) all() []*listener {
	t.mu.RLock()
	defer t.mu.RUnlock()
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
	t.mu.RLock()
	defer t.mu.RUnlock()
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
