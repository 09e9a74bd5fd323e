package config

// agentMaxIterations is an agent's max_iterations when it sets none (the
// LLM agent's DefaultMaxIterations).
const agentMaxIterations = 25

// normalizeChainDepth raises the default max_chain_depth, when the file does
// not set it, to twice the largest agent max_iterations: an organism whose
// agents iterate more than the default allows keeps loading as it did
// before the limit existed. A value written in the file is kept, and
// checked (checkChainDepth).
func (o *Organism) normalizeChainDepth() {
	if _, set := o.positions["max_chain_depth"]; set {
		return
	}
	for _, l := range o.Listeners {
		if l.Agent && 2*l.MaxIterations > o.MaxChainDepth {
			o.MaxChainDepth = 2 * l.MaxIterations
		}
	}
}

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
