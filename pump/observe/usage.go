package observe

// Usage is the token usage of one agent or backend.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	Requests         int
}

// UsageReport is the LLM usage per agent and per backend.
type UsageReport struct {
	Agents, Backends map[string]Usage
}

// UsageSource is the LLM router's usage ledger. The metrics define what they
// read rather than import the LLM listener (the pump's observers sit beside
// the listeners, not above them); whoever assembles the organism adapts its
// router with UsageFunc.
type UsageSource interface {
	Usage() UsageReport
}

// UsageFunc adapts a function to a UsageSource.
type UsageFunc func() UsageReport

// Usage calls f.
func (f UsageFunc) Usage() UsageReport { return f() }
