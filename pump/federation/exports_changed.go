package federation

import (
	"context"

	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
)

// ExportsChanged tells the peers linked now that this organism's exports
// may have changed (a reload changed its listeners): each asks again for
// what it imports, on the live link, rather than at its next link. A
// peer not linked now asks when it links. The word is signed like every
// envelope and sent only to gateways that export something.
func (m *Manager) ExportsChanged() {
	for _, g := range m.list() {
		if len(g.offer().exports) > 0 {
			g.exportsChanged()
		}
	}
}

// exportsChanged tells g's peer, when linked now, that what g exports may
// have changed (a reload changed g's exports, or the listeners behind
// them).
func (g *gateway) exportsChanged() {
	g.mu.Lock()
	c := g.conn
	g.mu.Unlock()
	if c == nil {
		return
	}
	m := g.m
	e := &envelope{From: m.opts.Organism, Thread: uuid.NewString(),
		Link: link{ID: uuid.NewString(), Kind: KindExportsChanged, Sent: m.now()}}
	signed, err := envsig.Sign(m.opts.Key, e.build())
	if err != nil {
		g.log.Error("federation: exports-changed not signed", "error", err)
		return
	}
	if err := c.write(signed); err != nil {
		g.log.Debug("federation: exports-changed not sent; the next link asks anyway", "error", err)
		return
	}
	g.envelopeSeen(DirectionOut, KindExportsChanged)
}

// refreshSoon asks the peer again for the imports (the peer said its
// exports changed), once at a time: a word that comes during a refresh
// makes one more after it.
func (g *gateway) refreshSoon() {
	if len(g.offer().imports) == 0 || !g.m.started.Load() {
		return
	}
	g.again.Store(true)
	if !g.refreshing.CompareAndSwap(false, true) {
		return
	}
	if !g.m.acquire() {
		g.refreshing.Store(false)
		return
	}
	go func() {
		defer g.m.wg.Done()
		for {
			for g.again.Swap(false) {
				g.refreshNow()
			}
			g.refreshing.Store(false)
			if !g.again.Load() || !g.refreshing.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// refreshNow fetches the imports from the peer and brings the imported
// listeners in line with them (refreshImports).
func (g *gateway) refreshNow() {
	ctx := context.Background()
	list, gone, _, _, err := g.fetchImports(ctx)
	if rerr := g.refreshImports(ctx, list, gone); rerr != nil {
		err = rerr
	}
	if g.m.onRefresh != nil {
		g.m.onRefresh(g.name, err)
	}
	if err != nil {
		g.log.Warn("federation: imports not refreshed after the peer's exports changed", "error", err)
		return
	}
	g.log.Info("federation: imports refreshed: the peer's exports changed")
}
