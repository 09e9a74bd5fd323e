package federation

import (
	"fmt"
	"strconv"
)

// tooDeep says why call e is refused for its hop count (link.Hops), with
// the refusal's reason, or "" when it may run: a count that is not one
// (a hostile or broken peer), or a chain that made max_chain_depth hops
// already, so that its first hop here would exceed the limit — typically
// listeners of two organisms that call each other through their gateways
// for ever. The text goes back to the caller, whose call fails with it.
func (g *gateway) tooDeep(e *envelope) (why, reason string) {
	if e.Link.BadHops != "" {
		return fmt.Sprintf("bad hop count %s: not a number of hops", strconv.Quote(e.Link.BadHops)), RefusedBadHops
	}
	if limit := g.m.opts.Pump.MaxChainDepth(); e.Link.Hops >= limit {
		return fmt.Sprintf("The conversation exceeded its hop limit: a call that had made %d hops reached organism %s, "+
			"which allows %d (max_chain_depth); it was not run, and the conversations that made it were stopped.",
			e.Link.Hops, g.m.opts.Organism, limit), RefusedTooDeep
	}
	return "", ""
}

// hopsOf is the hops the chain of callerThread has made (pump.ChainHops),
// which its call carries: the hop to the proxy included, so the callee's
// first listener is one hop further. A thread no longer live (its caller
// ended meanwhile) counts 0.
func (g *gateway) hopsOf(callerThread string) int {
	hops, _ := g.m.opts.Pump.ChainHops(callerThread)
	return hops
}
