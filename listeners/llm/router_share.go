package llm

// ShareUsage makes r keep its usage in from's ledger: a router that
// replaces another (a reload that changed the llm: section) goes on
// counting the same agents' and threads' tokens, so budgets and usage
// reports hold across the change. Call it before r is used.
func (r *Router) ShareUsage(from *Router) {
	if from != nil && from != r {
		r.usage = from.usage
	}
}
