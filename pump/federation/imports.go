package federation

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// importWorkers is how many calls of one imported capability are opened at
// once (signed, made durable, queued for the peer). A call that left waits
// for the peer's answer without a worker (pump.Detach, in proxy): the
// calls waiting on a slow peer, or nested in a cycle through it, never
// keep the next call — maybe one their own answers wait on — in the queue.
const importWorkers = 256

// workersPerImport is how many calls of one imported capability the
// manager opens at once: importWorkers, unless a test set fewer.
func (m *Manager) workersPerImport() int {
	if m.workers > 0 {
		return m.workers
	}
	return importWorkers
}

// listenerFor is the local listener standing for the peer's capability im.
func (g *gateway) listenerFor(im imported) (pump.Listener, error) {
	f, err := fields.FromXSD(im.XSD)
	if err != nil {
		return pump.Listener{}, fmt.Errorf("gateway %s: import <%s>: %w", g.name, im.Tag, err)
	}
	pt, err := f.PayloadType(im.XSD)
	if err != nil {
		return pump.Listener{}, fmt.Errorf("gateway %s: import <%s>: %w", g.name, im.Tag, err)
	}
	desc := im.Description
	if d := g.offer().description; d != "" {
		desc += " (via " + g.name + ": " + d + ")"
	} else {
		desc += " (via gateway " + g.name + ")"
	}
	return pump.Listener{Name: im.Name, Description: desc, Payload: pt, Handler: g.proxy(im.Name, pt),
		Workers: g.m.workersPerImport(), QueueSize: g.limits.Load().queueLimit, Remote: true}, nil
}

// importable splits list into the imports a local listener can stand for
// and why each other cannot (listenerFor): only the first are worth
// remembering for the next start, as no link can make the others
// importable until the peer changes its contract, which the next link
// learns anyway.
func (g *gateway) importable(list []imported) (ok []imported, why []error) {
	for _, im := range list {
		if _, err := g.listenerFor(im); err != nil {
			why = append(why, err)
			continue
		}
		ok = append(ok, im)
	}
	return ok, why
}

// isRegistered reports whether the import name is a local listener already.
func (g *gateway) isRegistered(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, done := g.registered[name]
	return done
}

// register adds the imported capabilities as local listeners (once each:
// one registered already is left as it is — refreshImports replaces it).
func (g *gateway) register(list []imported) error {
	var errs []error
	for _, im := range list {
		if g.isRegistered(im.Name) {
			continue
		}
		l, err := g.listenerFor(im)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := g.m.opts.Pump.AddListener(l); err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: import <%s> as %s: %w", g.name, im.Tag, im.Name, err))
			continue
		}
		if g.m.registerHook != nil {
			g.m.registerHook(im.Name)
		}
		g.mu.Lock()
		g.registered[im.Name] = im
		g.mu.Unlock()
		g.log.Info("federation: imported", "listener", im.Name, "root", im.Tag)
		if g.m.started.Load() && g.m.opts.OnImport != nil {
			g.m.opts.OnImport(g.name, im.Name)
		}
	}
	return errors.Join(errs...)
}

// refreshImports brings the imported listeners in line with what the peer
// exports now, as fetchImports learnt it: list (what it exports of the
// imported tags, with their schemas) and gone (the imported tags it no
// longer exports). It runs on every link up, as the peer may have
// restarted with other exports.
//
//   - An imported listener whose capability changed (its schema, its
//     description, the name the peer gives it) is replaced in one routing
//     change: new conversations validate their calls against the new
//     schema, and agents naming it are described the new one, while
//     conversations already running keep the listener they started with,
//     and a call it has open still gets its answer.
//   - One whose tag the peer no longer exports is removed, not kept: a
//     call to it could only be refused by the peer, and agents must not go
//     on being told of a capability nobody serves. A conversation already
//     running keeps it (its open calls still end, answered or refused);
//     a new call to it gets the pump's error for an unknown listener at
//     once, and the agents naming it are told it does not exist. The tag stays imported in the configuration: should the peer
//     export it again, a later link brings it back (importWhileUp asks
//     again while an import is missing).
//   - An import not registered yet is added (register).
//
// What stays registered is remembered for the next start (saveImports),
// the imports that could not be refreshed with what they were.
func (g *gateway) refreshImports(ctx context.Context, list []imported, gone []string) error {
	if len(list) == 0 && len(gone) == 0 {
		return nil // the peer told nothing (it could not be asked)
	}
	g.imu.Lock()
	defer g.imu.Unlock()
	// A reload may have taken a tag out of the imports since it was asked
	// for (reface): it is not registered again.
	imports := g.offer().imports
	list = slices.DeleteFunc(slices.Clone(list), func(im imported) bool { return !slices.Contains(imports, im.Tag) })
	var change pump.ListenerChange
	var errs []error
	replaced := map[string]imported{} // the new import by the name of the listener it replaces
	g.mu.Lock()
	byTag := make(map[string]imported, len(g.registered))
	for _, im := range g.registered {
		byTag[im.Tag] = im
	}
	g.mu.Unlock()
	for _, im := range list {
		old, ok := byTag[im.Tag]
		if !ok || (old.Name == im.Name && old.Description == im.Description && bytes.Equal(old.XSD, im.XSD)) {
			continue
		}
		l, err := g.listenerFor(im)
		if err != nil { // the old listener stays: it may still serve
			errs = append(errs, err)
			continue
		}
		change.Remove = append(change.Remove, old.Name)
		change.Add = append(change.Add, l)
		replaced[old.Name] = im
	}
	var removed []string
	for _, tag := range gone {
		if old, ok := byTag[tag]; ok {
			change.Remove = append(change.Remove, old.Name)
			removed = append(removed, old.Name)
		}
	}
	if len(change.Remove) > 0 {
		if _, err := g.m.opts.Pump.Change(change); err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: refreshing the imports: %w", g.name, err))
		} else {
			g.mu.Lock()
			for old, im := range replaced {
				delete(g.registered, old)
				g.registered[im.Name] = im
			}
			for _, name := range removed {
				delete(g.registered, name)
			}
			g.mu.Unlock()
			// Agents naming them describe and encode calls by the new
			// contract (or know them gone) from their next message on.
			g.m.opts.Pump.RebuildPeers(change.Remove...)
			for old, im := range replaced {
				g.log.Info("federation: import changed by the peer; listener replaced", "listener", im.Name, "was", old,
					"root", im.Tag)
				if old != im.Name && g.m.started.Load() && g.m.opts.OnImport != nil {
					g.m.opts.OnImport(g.name, im.Name)
				}
			}
			for _, name := range removed {
				g.log.Warn("federation: the peer no longer exports an imported tag; listener removed", "listener", name)
			}
		}
	}
	if err := g.register(list); err != nil {
		errs = append(errs, err)
	}
	if err := g.m.db.saveImports(ctx, g.name, g.registeredImports()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// registeredImports are the imports registered as listeners, by tag.
func (g *gateway) registeredImports() []imported {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]imported, 0, len(g.registered))
	for _, im := range g.registered {
		out = append(out, im)
	}
	slices.SortFunc(out, func(a, b imported) int { return cmp.Compare(a.Tag, b.Tag) })
	return out
}
