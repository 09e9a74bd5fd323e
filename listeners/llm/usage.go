package llm

import (
	"maps"
	"sync"
	"time"
)

// Usage counts the tokens of one or more requests.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	Requests         int
}

// Total returns prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// add returns u plus v.
func (u Usage) add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		Requests: u.Requests + v.Requests}
}

// CallRecord is one attempt of a Router.Chat — one HTTP call to one
// backend, completed or failed — as the Router's OnCall observer receives
// it.
type CallRecord struct {
	// Start is when the attempt began (before waiting for the backend's
	// token bucket and concurrency limit).
	Start time.Time
	// Backend names the backend; Model is the model that answered (the one
	// asked for when the call failed).
	Backend, Model string
	// Agent and Thread are the request's.
	Agent, Thread string
	// Attempt numbers the attempts of one Router.Chat from 1.
	Attempt int
	// Usage is the call's tokens. A failed call has none, unless the
	// model had begun to stream its reply: then the prompt and the text
	// streamed before the failure are estimated (UsageEstimated), which
	// is what the call spent.
	Usage Usage
	// UsageEstimated says the backend reported no usage: Usage is an
	// estimate of 4 bytes a token.
	UsageEstimated bool
	// Aborted says the caller stopped the call (its context was
	// cancelled: an operator's halt, cancel or kill, a reload, shutdown)
	// rather than the backend failing it; Err says how.
	Aborted bool
	// Wait is the time spent waiting for the token bucket and a free
	// concurrency slot; FirstToken the time from sending the request to
	// the first streamed delta (0 when not streamed or none came);
	// Duration the whole attempt, Wait included.
	Wait, FirstToken, Duration time.Duration
	// Streamed says the request asked for a stream.
	Streamed bool
	// FinishReason is why the model stopped ("" for a failed call).
	FinishReason FinishReason
	// ToolCalls is how many tool calls the reply made.
	ToolCalls int
	// Err is why the call failed (nil when it succeeded). It names neither
	// the backend nor the model: the record does.
	Err error
}

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

// ForgetThreadsUnless forgets the usage of every thread keep rejects and
// returns how many threads the ledger still holds. A caller that keeps the
// usage of ended threads (a conversation continued later on the same thread
// id) sweeps them with it once they are gone for good.
func (r *Router) ForgetThreadsUnless(keep func(thread string) bool) int {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	for id := range r.usage.threads {
		if !keep(id) {
			delete(r.usage.threads, id)
		}
	}
	return len(r.usage.threads)
}

// usageBook is the router's usage ledger: the sums of the successful calls
// per agent, per thread and per backend.
type usageBook struct {
	mu       sync.Mutex
	agents   map[string]Usage
	threads  map[string]Usage
	backends map[string]Usage
}

func (u *usageBook) record(agent, thread, backend string, v Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.agents == nil {
		u.agents, u.threads, u.backends = map[string]Usage{}, map[string]Usage{}, map[string]Usage{}
	}
	if agent != "" {
		u.agents[agent] = u.agents[agent].add(v)
	}
	if thread != "" {
		u.threads[thread] = u.threads[thread].add(v)
	}
	u.backends[backend] = u.backends[backend].add(v)
}

// RestoreThreadUsage adds the usage a previous run of the organism spent on
// each thread (read from its journal of calls) to the ledger, so the
// threads' budgets go on counting across a restart.
func (r *Router) RestoreThreadUsage(used map[string]Usage) {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	if r.usage.agents == nil {
		r.usage.agents, r.usage.threads, r.usage.backends = map[string]Usage{}, map[string]Usage{}, map[string]Usage{}
	}
	for thread, u := range used {
		r.usage.threads[thread] = r.usage.threads[thread].add(u)
	}
}
