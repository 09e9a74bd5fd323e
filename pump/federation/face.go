package federation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// face is what a gateway offers and takes on its link — its description,
// imports, exports and profile — as configured now. A reload that changes
// them swaps them on the running gateway (reface): its link, outbox and
// waiting calls stay.
type face struct {
	description string
	// imports are the peer's root tags local callers may reach; exports
	// the local ones the peer may call (exported by tag), as written.
	imports, exportList []string
	exports             map[string]bool
	// profile is the profile of the conversations the peer begins here.
	profile string
}

// faceOf reads gc's offer.
func faceOf(gc config.Gateway) *face {
	f := &face{description: gc.Description, imports: slices.Clone(gc.Import), exportList: slices.Clone(gc.Export),
		exports: make(map[string]bool, len(gc.Export)), profile: gc.Profile}
	for _, t := range gc.Export {
		f.exports[t] = true
	}
	return f
}

// with is gc with the offer of f.
func (f *face) with(gc config.Gateway) config.Gateway {
	gc.Description, gc.Import, gc.Export, gc.Profile = f.description, f.imports, f.exportList, f.profile
	return gc
}

// offer is what g offers and takes now.
func (g *gateway) offer() *face { return g.face.Load() }

// exported reports whether the peer may call the local root tag now.
func (g *gateway) exported(tag string) bool { return g.face.Load().exports[tag] }

// inPlace reports whether g can take gc's settings without a restart:
// every change but starting or stopping to dial (and a name written
// otherwise) is made on the running gateway — its limits (retune), its
// offer (reface), where its peer is and the key it trusts (relinkTo).
func (g *gateway) inPlace(gc config.Gateway) bool {
	cur := g.settings()
	return cur.Name == gc.Name && (cur.RemoteURL == "") == (gc.RemoteURL == "")
}

// reface puts gc's offer in force on g without dropping a call:
//   - an import no longer listed has its listener removed (conversations
//     already running keep it, and its open calls still end), and one
//     added is asked of the peer at once on the live link (else at the
//     next link, as ever);
//   - a new description describes the imported listeners from now on
//     (each is replaced in one routing change, as refreshImports does);
//   - a change of exports is told to the peer on the live link
//     (exports-changed), so that it asks again for what it imports; the
//     peer's calls admitted already go on;
//   - a new profile applies to the peer's messages from now on: a
//     conversation it begins runs under it, one it continues keeps its
//     own profile narrowed by it (pump.Principal).
func (g *gateway) reface(ctx context.Context, gc config.Gateway) error {
	old, nf := g.offer(), faceOf(gc)
	g.face.Store(nf)
	// A refresh registering listeners meanwhile finishes first: the
	// listeners it adds are in registered, and taken out here if they
	// are no longer imported (a refresh from now on reads nf).
	g.imu.Lock()
	g.mu.Lock()
	regs := maps.Clone(g.registered)
	g.mu.Unlock()
	var errs []error
	var change pump.ListenerChange
	var removed []string
	replaced := map[string]imported{}
	for name, im := range regs {
		switch {
		case !slices.Contains(nf.imports, im.Tag):
			change.Remove = append(change.Remove, name)
			removed = append(removed, name)
		case old.description != nf.description:
			l, err := g.listenerFor(im)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			change.Remove = append(change.Remove, name)
			change.Add = append(change.Add, l)
			replaced[name] = im
		}
	}
	if len(change.Remove) > 0 {
		if _, err := g.m.opts.Pump.Change(change); err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: applying the changed import or description: %w", g.name, err))
		} else {
			g.mu.Lock()
			for _, name := range removed {
				delete(g.registered, name)
			}
			g.mu.Unlock()
			g.m.opts.Pump.RebuildPeers(change.Remove...)
			for _, name := range removed {
				g.log.Info("federation: import taken out by a reload; listener removed", "listener", name)
			}
		}
		if err := g.m.db.saveImports(ctx, g.name, g.registeredImports()); err != nil {
			errs = append(errs, err)
		}
	}
	g.imu.Unlock()
	if slices.ContainsFunc(nf.imports, func(tag string) bool { return !slices.Contains(old.imports, tag) }) && g.linked() {
		g.refreshSoon()
	}
	if !slices.Equal(old.exportList, nf.exportList) {
		if len(nf.exports) > 0 {
			g.m.subscribeServed()
		}
		g.exportsChanged()
	}
	g.log.Info("federation: gateway offer changed by a reload", "description", nf.description, "import", nf.imports,
		"export", nf.exportList, "profile", nf.profile)
	return errors.Join(errs...)
}

// linked reports whether g's link is up.
func (g *gateway) linked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn != nil
}
