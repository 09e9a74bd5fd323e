package config

// Platform is the platform: section: kernel limits.
type Platform struct {
	// ContextBuffer bounds the per-thread message history.
	ContextBuffer ContextBuffer `yaml:"context_buffer"`
	// PromptRegistry governs agent prompts.
	PromptRegistry PromptRegistry `yaml:"prompt_registry"`
	// LLM holds platform-wide LLM limits.
	LLM PlatformLLM `yaml:"llm"`
	// ThreadTTL is how long an idle thread lives before it is collected
	// (default 1h).
	ThreadTTL Duration `yaml:"thread_ttl"`
}

// ContextBuffer bounds the context buffer.
type ContextBuffer struct {
	// MaxSlotsPerThread caps the messages kept per thread (default 10000).
	MaxSlotsPerThread int `yaml:"max_slots_per_thread"`
	// MaxThreads caps the threads with a buffer (default 1000).
	MaxThreads int `yaml:"max_threads"`
	// TTLHours drops a thread's buffer after this many idle hours
	// (default 24).
	TTLHours int `yaml:"ttl_hours"`
}

// PromptRegistry governs the prompt registry.
type PromptRegistry struct {
	// AllowRuntimeUpdate permits changing prompts after boot (default false).
	AllowRuntimeUpdate bool `yaml:"allow_runtime_update"`
}

// PlatformLLM holds platform-wide LLM limits; 0 means no limit.
type PlatformLLM struct {
	// RateLimitPerAgent caps the tokens per minute of one agent.
	RateLimitPerAgent int `yaml:"rate_limit_per_agent"`
	// CacheTTLSeconds keeps identical completions this long (0 = no cache).
	CacheTTLSeconds int `yaml:"cache_ttl_seconds"`
	// MaxTokensPerRequest caps max_tokens of one request.
	MaxTokensPerRequest int `yaml:"max_tokens_per_request"`
}
