package federation

import (
	"errors"
	"fmt"
)

// RestoreImports adds again, with the contract the peer last gave, every
// imported listener taken out of the pump behind the gateway's back (an
// operator's `xmlpipe ctl unregister-listener` of an import, which stops
// it at once): a reload brings it back, as it brings back a listener
// organism.yaml declares. The gateway went on counting such an import as
// registered, so neither a reload nor a new link restored it, and only a
// restart did. An import still in the pump is left as it is.
func (m *Manager) RestoreImports() error {
	var errs []error
	for _, g := range m.list() {
		for _, im := range g.registeredImports() {
			if _, ok := m.opts.Pump.Lookup(im.Name); ok {
				continue
			}
			l, err := g.listenerFor(im)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := m.opts.Pump.AddListener(l); err != nil {
				errs = append(errs, fmt.Errorf("gateway %s: restore import <%s> as %s: %w", g.name, im.Tag, im.Name, err))
				continue
			}
			g.log.Info("federation: import restored", "listener", im.Name, "root", im.Tag)
			if m.started.Load() && m.opts.OnImport != nil {
				m.opts.OnImport(g.name, im.Name) // agents whose peers name the gateway reach it again
			}
		}
	}
	return errors.Join(errs...)
}
