package federation

import (
	"context"
	"crypto/ed25519"
	"crypto/subtle"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// GatewayChange is a reload's change of the running gateways, checked by
// PlanGateways and not applied until Apply: the running gateways are left
// as they are until then.
type GatewayChange struct {
	m *Manager
	// Added, Removed and Changed name the gateways the change starts,
	// stops, and changes (in place, or by stopping and starting them
	// again: Restarted names those).
	Added, Removed, Changed, Restarted []string
	// add are the gateways to start (built, their keys read); stop the
	// running ones to stop first; tune the running ones changed in place.
	add  []*gateway
	stop []*gateway
	tune []tune
}

// tune is a running gateway changed in place, with its new settings and
// where it links to now.
type tune struct {
	g  *gateway
	gc config.Gateway
	to *linkTarget
}

// linkTarget is where a gateway's peer is and the key it must present.
type linkTarget struct {
	url     string
	trusted ed25519.PublicKey
	// identity is the trusted_identity file the key was read from;
	// registered says it came over OOB instead (config TrustedKey).
	identity   string
	registered bool
}

// peerKey is the identity g's peer must present now.
func (g *gateway) peerKey() ed25519.PublicKey { return g.target.Load().trusted }

// remoteURL is where g dials its peer now ("": it only accepts the peer's
// link).
func (g *gateway) remoteURL() string { return g.target.Load().url }

// settings is g's configuration with where it links to now.
func (g *gateway) settings() config.Gateway {
	gc, t := g.limits.Load().withLimits(g.offer().with(g.cfg)), g.target.Load()
	gc.RemoteURL, gc.TrustedIdentity = t.url, t.identity
	return gc
}

// apply makes the in-place change of g to gc (inPlace), linking to t:
// its limits (retune), its offer (reface), then where its peer is and the
// key it trusts (relinkTo) — each only when it changed.
func (g *gateway) apply(ctx context.Context, gc config.Gateway, t *linkTarget) error {
	cur := g.settings()
	if !reflect.DeepEqual(limitsOf(cur).configured, limitsOf(gc).configured) {
		g.retune(gc)
	}
	var err error
	if !reflect.DeepEqual(cur, faceOf(gc).with(cur)) {
		err = g.reface(ctx, gc)
	}
	old := g.target.Load()
	if old.url != t.url || old.identity != t.identity || old.registered != t.registered ||
		subtle.ConstantTimeCompare(old.trusted, t.trusted) != 1 {
		g.relinkTo(t)
	}
	return err
}

// relinkTo makes g link to t: its current link closes, and the dialer (or
// the peer, for a gateway that only accepts) links again — with what
// waits in the outbox and the calls waiting on the peer kept, as after any
// cut link.
func (g *gateway) relinkTo(t *linkTarget) {
	g.target.Store(t)
	g.mu.Lock()
	c := g.conn
	g.mu.Unlock()
	if c != nil {
		c.close(closingRelinked)
	}
	select {
	case g.redial <- struct{}{}:
	default:
	}
	g.log.Info("federation: gateway relinked by a reload", "url", t.url, "key", Fingerprint(t.trusted))
}

// Empty reports a change that changes nothing.
func (c *GatewayChange) Empty() bool {
	return c == nil || len(c.Added)+len(c.Removed)+len(c.Changed) == 0
}

// PlanGateways compares gs, the gateways a reloaded configuration wants
// (those registered over OOB included), with the running ones by name: a
// gateway absent from the running ones is to be added, one running and
// absent from gs removed, one whose settings differ — or whose
// trusted_identity file holds another key now — changed: in place
// (inPlace), unless it starts or stops dialing, which restarts it. Every key is
// read now, so a change whose identity cannot be read, or whose gateways
// would trust one key twice or import one tag twice, is refused here and
// nothing runs differently. where(i, field) locates gs[i]'s field for an
// error (say "a.yaml:18: gateways[0].trusted_identity").
func (m *Manager) PlanGateways(gs []config.Gateway, where func(i int, field string) string) (*GatewayChange, error) {
	running := m.list()
	byName := map[string]*gateway{}
	for _, g := range running {
		byName[strings.ToLower(g.name)] = g
	}
	c := &GatewayChange{m: m}
	var errs []error
	final := []*gateway{}
	wanted := map[string]bool{}
	for i, gc := range gs {
		key := strings.ToLower(gc.Name)
		wanted[key] = true
		ng, err := m.newGateway(gc)
		if err != nil {
			field := "trusted_identity"
			if len(gc.TrustedKey) > 0 {
				field = "name"
			}
			errs = append(errs, fmt.Errorf("%s: %w", where(i, field), err))
			continue
		}
		old := byName[key]
		switch {
		case old == nil:
			c.Added = append(c.Added, gc.Name)
			c.add = append(c.add, ng)
			final = append(final, ng)
		case reflect.DeepEqual(old.settings(), gc) && subtle.ConstantTimeCompare(old.peerKey(), ng.peerKey()) == 1:
			final = append(final, old)
		case old.inPlace(gc):
			c.Changed = append(c.Changed, gc.Name)
			c.tune = append(c.tune, tune{g: old, gc: gc, to: ng.target.Load()})
			final = append(final, ng)
		default:
			c.Changed = append(c.Changed, gc.Name)
			c.Restarted = append(c.Restarted, gc.Name)
			c.stop = append(c.stop, old)
			c.add = append(c.add, ng)
			final = append(final, ng)
		}
	}
	for _, g := range running {
		if !wanted[strings.ToLower(g.name)] {
			c.Removed = append(c.Removed, g.name)
			c.stop = append(c.stop, g)
		}
	}
	for i, g := range final {
		for _, o := range final[:i] {
			if subtle.ConstantTimeCompare(o.peerKey(), g.peerKey()) == 1 {
				errs = append(errs, fmt.Errorf("%w: gateways %s and %s trust the same key (%s): one gateway per peer",
					ErrGatewayExists, o.name, g.name, Fingerprint(g.peerKey())))
			}
			gi, oi := g.offer().imports, o.offer().imports
			if j := slices.IndexFunc(gi, func(tag string) bool { return slices.Contains(oi, tag) }); j >= 0 {
				errs = append(errs, fmt.Errorf("%w: gateways %s and %s both import <%s>: one gateway per imported tag",
					ErrGatewayExists, o.name, g.name, gi[j]))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Apply puts the change in force: each gateway changed in place takes its
// new settings, link, outbox and waiting calls kept; each gateway removed
// or restarted stops as RemoveGateway stops it (the calls waiting on its
// peer fail with ErrGatewayRemoved, what waits in its outbox stays in the
// state), then each gateway added or restarted starts — a restarted one
// with the outbox its predecessor left, so nothing queued is lost — and
// links to its peer; its imports become listeners once the link is up (at
// once, with the contract last remembered, when some are). ctx bounds the
// removals.
func (c *GatewayChange) Apply(ctx context.Context) error {
	if c.Empty() {
		return nil
	}
	m := c.m
	var errs []error
	for _, t := range c.tune {
		if err := t.g.apply(ctx, t.gc, t.to); err != nil {
			errs = append(errs, err)
		}
	}
	for _, g := range c.stop {
		if err := m.RemoveGateway(ctx, g.name); err != nil && !errors.Is(err, ErrNoGateway) {
			errs = append(errs, err)
		}
	}
	exports := false
	for _, g := range c.add {
		if err := m.insert(g); err != nil {
			errs = append(errs, err)
			continue
		}
		exports = exports || len(g.offer().exports) > 0
		if err := m.adoptServed(g); err != nil {
			errs = append(errs, err)
		}
		if list, err := m.db.loadImports(g.name); err != nil {
			errs = append(errs, err)
		} else if list, _ = g.importable(list); len(list) > 0 {
			if err := g.register(list); err != nil {
				errs = append(errs, err)
			}
		}
		g.log.Info("federation: gateway started by a reload", "url", g.cfg.RemoteURL, "import", g.offer().imports,
			"export", g.offer().exportList)
		if m.started.Load() {
			m.run(g)
		}
	}
	if exports {
		m.subscribeServed()
	}
	return errors.Join(errs...)
}

// insert loads g's outbox and adds it to the running gateways. What a
// predecessor of its name (a gateway the reload stopped) was handed after
// it stopped — the answers of the conversations serving its peer's calls
// — is committed first, so that g's outbox holds it.
func (m *Manager) insert(g *gateway) error {
	m.handover.Lock()
	defer m.handover.Unlock()
	if err := m.db.write("handover", func(execer) error { return nil }); err != nil {
		return fmt.Errorf("federation: gateway %s: %w", g.name, err)
	}
	m.gmu.Lock()
	defer m.gmu.Unlock()
	if _, ok := m.byName[strings.ToLower(g.name)]; ok {
		return fmt.Errorf("%w: %s", ErrGatewayExists, g.name)
	}
	if err := g.load(); err != nil {
		return err
	}
	m.gateways = append(append([]*gateway(nil), m.gateways...), g)
	m.byName[strings.ToLower(g.name)] = g
	return nil
}

// subscribeServed follows the pump's events of the conversations that
// serve peers' calls (onEvent), once: New does when a gateway exports, a
// reload when it adds the first that does.
func (m *Manager) subscribeServed() {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if m.unsubscribe != nil || m.dbClosed {
		return
	}
	m.unsubscribe = m.opts.Pump.SubscribeKinds(pump.OutletFunc(m.onEvent), pump.EventReply, pump.EventHuh,
		pump.EventComplete)
}

// answerThrough queues e, the answer of served conversation conv, for the
// peer of g — the gateway its call came through — or of the gateway that
// replaced g since (a reload that restarted it): the conversations serving
// the peer's calls go on across the restart, and their answers leave on
// the new gateway's link instead of waiting in the stopped one's queue
// until the next start. With g removed and not replaced, the answer waits
// in the state for a gateway of that name.
func (m *Manager) answerThrough(g *gateway, e *envelope, conv string) error {
	m.handover.RLock()
	defer m.handover.RUnlock()
	m.gmu.RLock()
	if now := m.byName[strings.ToLower(g.name)]; now != nil {
		g = now
	}
	m.gmu.RUnlock()
	return g.sendAnswer(e, conv)
}
