package config

import "time"

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
	// NoteTTL is how long the note of a history removed (idle for
	// TTLHours, or dropped to keep MaxThreads) waits for its conversation
	// to go on (default 720h, 30 days): a conversation continued later is
	// not told its earlier history went.
	NoteTTL Duration `yaml:"note_ttl"`
	// MaxNotes is how many such notes may wait at once, the oldest
	// dropped first (default MaxThreads, at least 1000).
	MaxNotes int `yaml:"max_notes"`
}

// Defaults of the notes of removed histories (registry.DefaultNoteTTL,
// registry.MinMaxNotes: pump/config imports no registry).
const (
	defaultNoteTTL = Duration(30 * 24 * time.Hour)
	minMaxNotes    = 1000
)

// normalizeContextBuffer fills max_notes from max_threads when it was not
// written.
func (o *Organism) normalizeContextBuffer() {
	cb := &o.Platform.ContextBuffer
	if _, written := o.positions["platform.context_buffer.max_notes"]; !written {
		cb.MaxNotes = max(cb.MaxThreads, minMaxNotes)
	}
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
