package llm

import "maps"

// AgentUsage returns the usage recorded for agent.
func (r *Router) AgentUsage(agent string) Usage {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.agents[agent]
}

// ThreadUsage returns the usage recorded on thread.
func (r *Router) ThreadUsage(thread string) Usage {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.threads[thread]
}

// UsageReport is a copy of the router's ledger.
type UsageReport struct {
	Agents, Backends map[string]Usage
}

// Usage returns the usage per agent and per backend.
func (r *Router) Usage() UsageReport {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return UsageReport{Agents: maps.Clone(r.usage.agents), Backends: maps.Clone(r.usage.backends)}
}

// ThreadsEnded forgets the usage of ended threads (register it with
// registry.Threads.OnEnd).
func (r *Router) ThreadsEnded(ids []string) {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	for _, id := range ids {
		delete(r.usage.threads, id)
	}
}
