package organism

import "github.com/xml-pipeline/xmlpipe/pump"

// A halt is recorded however it was made: through Governance (Halt,
// HaltListener, Resume, ResumeListener, on behalf of someone) or on the
// organism's pump directly (o.Pump.HaltListener, which names nobody). The
// pump tells Governance of each change (pump.Pump.OnHaltChange), which
// logs it as a security event with who did it, tells its subscribers and
// keeps it across a restart — so calling the pump directly is no trap.

// directHalt is who a halt made on the pump directly is recorded as made by.
const directHalt = "pump"

// acting marks the halt Governance is about to make as made on behalf of
// by, until the returned function is called.
func (g *Governance) acting(by string) (done func()) {
	g.actMu.Lock()
	g.actor.Store(&by)
	return func() {
		g.actor.Store(nil)
		g.heldMu.Lock()
		held := g.held
		g.held = nil
		g.heldMu.Unlock()
		g.actMu.Unlock()
		for _, e := range held {
			g.emit(e)
		}
	}
}

// tell emits e, or holds it for acting's done when a halt through
// Governance is in progress.
func (g *Governance) tell(e GovernanceEvent) {
	if g.actor.Load() != nil {
		g.heldMu.Lock()
		if g.actor.Load() != nil {
			g.held = append(g.held, e)
			g.heldMu.Unlock()
			return
		}
		g.heldMu.Unlock()
	}
	g.emit(e)
}

// haltChanged records c (the pump's OnHaltChange hook).
func (g *Governance) haltChanged(c pump.HaltChange) {
	if g.restoring.Load() {
		return
	}
	by := directHalt
	if a := g.actor.Load(); a != nil {
		by = *a
	}
	rep := c.Report
	switch {
	case c.Halted && c.Listener == "":
		if err := g.keepHalt(); err != nil {
			// In force all the same; only a restart would lift it.
			g.log.Error("emergency halt in force but not kept across a restart", "error", err)
		}
		g.log.Warn("security event: emergency halt", "security", true, "by", by, "scope", rep.Scope.String(),
			"cancelled", rep.Cancelled, "held", rep.Held)
		g.tell(GovernanceEvent{Kind: EventHalted, Time: g.clock(), Scope: rep.Scope.String(), By: by})
	case c.Halted:
		if err := g.keepHalt(); err != nil {
			g.log.Error("listener halt in force but not kept across a restart", "error", err)
		}
		g.log.Warn("security event: emergency halt of a listener", "security", true, "by", by, "listener", rep.Listener,
			"cancelled", rep.Cancelled, "held", rep.Held)
		g.tell(GovernanceEvent{Kind: EventHalted, Time: g.clock(), Scope: ScopeListener, Listener: rep.Listener, By: by})
	case c.Listener == "":
		if err := g.dropHalt(); err != nil {
			g.log.Error("emergency halt lifted but still kept: the next start would be halted", "error", err)
		}
		g.log.Warn("emergency halt lifted", "by", by)
		g.tell(GovernanceEvent{Kind: EventResumed, Time: g.clock(), By: by})
	default:
		if err := g.keepHalt(); err != nil {
			g.log.Error("listener halt lifted but still kept: the next start would halt it", "error", err)
		}
		g.log.Warn("emergency halt of a listener lifted", "by", by, "listener", c.Listener)
		g.tell(GovernanceEvent{Kind: EventResumed, Time: g.clock(), Scope: ScopeListener, Listener: c.Listener, By: by})
	}
}
