package config

import llmconfig "github.com/xml-pipeline/xmlpipe/listeners/llm/config"

// Budgets is the budgets: section: token budgets fed by real LLM usage.
type Budgets struct {
	// ThreadTokens caps the tokens one thread may spend (0 = unlimited).
	ThreadTokens int `yaml:"thread_tokens"`
	// AgentTokens caps the tokens one agent may spend (0 = unlimited).
	AgentTokens int `yaml:"agent_tokens"`
	// OnExceed is what happens when a budget is exhausted (default stop).
	OnExceed ExceedPolicy `yaml:"on_exceed"`
	// RepeatLimit is the progress guard: an agent whose normalised output
	// is the same this many times in a row on a thread is halted
	// (default 3).
	RepeatLimit int `yaml:"repeat_limit"`
}

// ExceedPolicy is what the pump does when a token budget is exhausted (the
// LLM listener's type: it enforces the budgets).
type ExceedPolicy = llmconfig.ExceedPolicy

// The budget exceed policies.
const (
	// ExceedStop refuses further LLM calls for the thread or agent.
	ExceedStop = llmconfig.ExceedStop
	// ExceedWarn logs a warning and carries on.
	ExceedWarn = llmconfig.ExceedWarn
)
