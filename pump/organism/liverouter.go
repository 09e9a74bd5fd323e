package organism

import (
	"context"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
)

// liveRouter is the LLM router and the token budgets in force, as every
// version of every agent reaches them. A reload that changes the llm: or
// budgets: section builds new agent versions for the conversations that
// start after it, while the running ones stay on the version they began
// with; both call the model through this one liveRouter, so the running
// conversations' next model call goes to the new backends too (the old
// ones may be gone: that is often why the operator changed them) and is
// checked against the new budgets. A call in flight at the reload ends on
// the router it started on.
type liveRouter struct {
	cur    atomic.Pointer[llm.Router]
	budget atomic.Pointer[llm.Budget]
}

// newLiveRouter is a liveRouter in force with r and b.
func newLiveRouter(r *llm.Router, b llm.Budget) *liveRouter {
	l := &liveRouter{}
	l.set(r, b)
	return l
}

// liveState is what a liveRouter has in force (to put it back).
type liveState struct {
	router *llm.Router
	budget *llm.Budget
}

// set puts r and b in force and returns what was.
func (l *liveRouter) set(r *llm.Router, b llm.Budget) liveState {
	return liveState{router: l.cur.Swap(r), budget: l.budget.Swap(&b)}
}

// restore puts s back in force (a refused reload).
func (l *liveRouter) restore(s liveState) {
	l.cur.Store(s.router)
	l.budget.Store(s.budget)
}

// Chat sends r through the router in force.
func (l *liveRouter) Chat(ctx context.Context, r llm.Request) (llm.Reply, error) {
	return l.cur.Load().Chat(ctx, r)
}

// ModelTraits is what the router in force says of model.
func (l *liveRouter) ModelTraits(model string) llm.ModelTraits {
	return l.cur.Load().ModelTraits(model)
}

// AgentUsage is agent's usage in the ledger the routers share.
func (l *liveRouter) AgentUsage(agent string) llm.Usage { return l.cur.Load().AgentUsage(agent) }

// ThreadUsage is thread's usage in the ledger the routers share.
func (l *liveRouter) ThreadUsage(thread string) llm.Usage { return l.cur.Load().ThreadUsage(thread) }

// Budget is the budgets: section in force.
func (l *liveRouter) Budget() llm.Budget { return *l.budget.Load() }
