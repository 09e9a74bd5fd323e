package config

// ExceedPolicy is what the pump does when a token budget is exhausted.
type ExceedPolicy string

// The budget exceed policies.
const (
	// ExceedStop refuses further LLM calls for the thread or agent.
	ExceedStop ExceedPolicy = "stop"
	// ExceedWarn logs a warning and carries on.
	ExceedWarn ExceedPolicy = "warn"
)

// Valid reports whether p is a known policy.
func (p ExceedPolicy) Valid() bool { return p == ExceedStop || p == ExceedWarn }
