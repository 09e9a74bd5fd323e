package config

// agentMaxIterations is an agent's max_iterations when it sets none (the
// LLM agent's DefaultMaxIterations).
const agentMaxIterations = 25

// checkChainDepth checks max_chain_depth: positive, and above every agent's
// max_iterations, since an agent iterating on its own messages takes one hop
// of the chain per iteration and must not be stopped before its own bound.
func (o *Organism) checkChainDepth(r *reporter) {
	if o.MaxChainDepth <= 0 {
		r.positive("max_chain_depth", o.MaxChainDepth)
		return
	}
	for i, l := range o.Listeners {
		if !l.Agent || l.MaxIterations < 0 {
			continue // a negative max_iterations is reported with the agent
		}
		if l.MaxIterations == 0 {
			if agentMaxIterations >= o.MaxChainDepth {
				r.add("max_chain_depth", "must exceed the max_iterations of agent %s (%d by default), got %d",
					l.Name, agentMaxIterations, o.MaxChainDepth)
			}
			continue
		}
		if l.MaxIterations >= o.MaxChainDepth {
			r.add(childIndex("listeners", i)+".max_iterations",
				"must be below max_chain_depth (%d): the agent's self-iteration takes a hop of the chain per iteration, got %d",
				o.MaxChainDepth, l.MaxIterations)
		}
	}
}
