package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/meta"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// MetaRemoteFunc is the federation hook of meta introspection: it reports
// whether from is a federation peer (a gateway's sender) and, if so, which
// capabilities that peer may see (its export filter; nil means all). A peer
// is answered only when meta.allow_remote is on, and only about what
// visible lets it see.
type MetaRemoteFunc func(from string) (visible func(meta.Capability) bool, ok bool)

// localConsole is the <from> of the in-process console (ConsoleFrom): the
// operator at the terminal of the process, who owns the organism.
const localConsole = "console"

// sessionKinds are the kinds of the session identities kind:user the bus
// builds for logged-in users (pump.Principal).
var sessionKinds = []string{"api", "console", "websocket"}

// metaFlags mirrors the meta: section.
func metaFlags(m config.Meta) meta.Flags {
	return meta.Flags{Enabled: m.Enabled, AllowListCapabilities: m.AllowListCapabilities,
		SchemaRequests: meta.Access(m.AllowSchemaRequests), ExampleRequests: meta.Access(m.AllowExampleRequests),
		PromptRequests: meta.Access(m.AllowPromptRequests), AllowRemote: m.AllowRemote}
}

// organismOwn reports whether name is one of the organism's own listeners
// (system.*, core.*), which meta introspection never describes.
func organismOwn(name string) bool {
	n := strings.ToLower(name)
	return n == "system" || n == "core" || strings.HasPrefix(n, "system.") || strings.HasPrefix(n, "core.")
}

// pumpCatalog is the pump's listeners, less the organism's own, as meta
// capabilities. It reads the routing table on every question, so
// listeners added or removed while running are seen at once.
type pumpCatalog struct{ p *pump.Pump }

// Capabilities lists the capabilities in registration order.
func (c pumpCatalog) Capabilities() []meta.Capability {
	var out []meta.Capability
	for _, info := range c.p.Listeners() {
		if k, ok := c.Capability(info.Name); ok {
			out = append(out, k)
		}
	}
	return out
}

// Capability finds a listener by name, as routing does.
func (c pumpCatalog) Capability(name string) (meta.Capability, bool) {
	l, ok := c.p.Lookup(name)
	if !ok || organismOwn(l.Name) || l.Payload == nil {
		return meta.Capability{}, false
	}
	return meta.Capability{Name: l.Name, Description: l.Description, Payload: l.Payload}, true
}

// metaCallers classifies senders for the meta listeners:
//
//   - a federation peer (Options.MetaRemote) is remote and authenticated,
//     and sees what its export filter lets it see;
//   - the in-process console ("console") is admin: it is the operator at
//     the process's terminal;
//   - a session identity kind:user (api:, console:, websocket:, which the
//     bus enforces with pump.InjectAs) is authenticated, and admin when the
//     store's user has the admin role (no store: no admin sessions);
//   - a local operator client (Options.MetaOperators: the stdio client
//     of xmlpipe mcp, started by the organism's owner) is authenticated;
//   - a registered listener is authenticated;
//   - anything else is not authenticated.
type metaCallers struct {
	p         *pump.Pump
	store     *store.Store
	remote    MetaRemoteFunc
	operators []string
	log       *slog.Logger
}

// Classify describes the sender from.
func (m metaCallers) Classify(from string) meta.Caller {
	c := meta.Caller{Name: from}
	if m.remote != nil {
		if visible, ok := m.remote(from); ok {
			c.Authenticated, c.Remote = true, true
			c.Visible = visible
			return c
		}
	}
	if from == localConsole {
		c.Authenticated, c.Admin = true, true
		return c
	}
	if kind, user, ok := strings.Cut(from, ":"); ok && user != "" && slices.Contains(sessionKinds, kind) {
		c.Authenticated = true
		c.Admin = m.isAdmin(user)
		return c
	}
	if slices.Contains(m.operators, from) {
		c.Authenticated = true
		return c
	}
	if _, ok := m.p.Lookup(from); ok {
		c.Authenticated = true
	}
	return c
}

// isAdmin reports whether user has the admin role in the store.
func (m metaCallers) isAdmin(user string) bool {
	if m.store == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u, err := m.store.GetUser(ctx, user)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			m.log.Warn("meta: user lookup failed; not treated as admin", "user", user, "error", err)
		}
		return false
	}
	return auth.Role(u.Role) == auth.Admin
}

// metaGate is the service and the callers the core meta listeners answer
// with, kept to tell which of them a sender may call at all (MetaRefuses).
type metaGate struct {
	service *meta.Service
	callers metaCallers
}

// registerMeta registers the four core meta listeners when meta.enabled
// and returns what they answer with (nil when meta is disabled).
func registerMeta(p *pump.Pump, cfg *config.Organism, opts Options, d *durable) (*metaGate, error) {
	if !cfg.Meta.Enabled {
		return nil, nil
	}
	callers := metaCallers{p: p, remote: opts.MetaRemote, operators: opts.MetaOperators, log: opts.Logger}
	if d != nil {
		callers.store = d.store
	}
	svc := meta.NewService(metaFlags(cfg.Meta), pumpCatalog{p})
	ls, err := meta.Listeners(svc, callers)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if err := p.RegisterSystem(pump.Listener{Name: l.Name, Description: l.Description, Payload: l.Payload,
			Handler: l.Handler, Public: true}); err != nil {
			return nil, fmt.Errorf("meta: listener %s: %w", l.Name, err)
		}
	}
	return &metaGate{service: svc, callers: callers}, nil
}

// MetaRefuses reports whether listener is a core meta listener
// (core.list-capabilities, core.request-schema, -example, -prompt) whose
// every question from the sender from the meta: flags refuse: a client
// that offers the organism's listeners as tools (xmlpipe mcp) leaves those
// out rather than offer a tool no call of which can succeed.
func (o *Organism) MetaRefuses(from, listener string) bool {
	if !meta.IsCoreListener(listener) {
		return false
	}
	if o.meta == nil {
		return true
	}
	return o.meta.service.Refuses(o.meta.callers.Classify(from), listener)
}
