package config

import (
	"os"
	"strings"
	"time"
)

// LLM is the llm: section: the router strategy and its backends.
type LLM struct {
	// Strategy picks a backend per request (default failover).
	Strategy Strategy `yaml:"strategy"`
	// Retries is the number of retries after the first attempt (default 3).
	Retries int `yaml:"retries"`
	// RetryBaseDelay is the first backoff delay (default 1s). Numbers are
	// seconds, strings Go durations.
	RetryBaseDelay Duration `yaml:"retry_base_delay"`
	// RetryMaxDelay caps the backoff delay (default 60s).
	RetryMaxDelay Duration `yaml:"retry_max_delay"`
	// Backends are the configured providers, in file order.
	Backends []Backend `yaml:"backends"`
}

// Strategy is the LLM router's backend selection strategy.
type Strategy string

// The LLM router strategies.
const (
	// Failover tries backends in priority order (the default).
	Failover Strategy = "failover"
	// RoundRobin spreads requests evenly across backends.
	RoundRobin Strategy = "round-robin"
	// LeastLoaded picks the backend with the fewest requests in flight.
	LeastLoaded Strategy = "least-loaded"
)

// Valid reports whether s is a known strategy.
func (s Strategy) Valid() bool { return s == Failover || s == RoundRobin || s == LeastLoaded }

// Provider is an LLM provider kind.
type Provider string

// The supported LLM providers.
const (
	// XAI is xAI's Grok API.
	XAI Provider = "xai"
	// Anthropic is Anthropic's Messages API.
	Anthropic Provider = "anthropic"
	// OpenAI is OpenAI's Chat Completions API.
	OpenAI Provider = "openai"
	// Ollama is a local Ollama server.
	Ollama Provider = "ollama"
)

// DefaultBaseURL returns the provider's default API endpoint, or "" for an
// unknown provider.
func (p Provider) DefaultBaseURL() string {
	switch p {
	case XAI:
		return "https://api.x.ai/v1"
	case Anthropic:
		return "https://api.anthropic.com/v1"
	case OpenAI:
		return "https://api.openai.com/v1"
	case Ollama:
		return "http://localhost:11434"
	}
	return ""
}

// Valid reports whether p is a supported provider.
func (p Provider) Valid() bool { return p.DefaultBaseURL() != "" }

// Backend is one llm.backends[] entry.
type Backend struct {
	// Provider is the provider kind (case-insensitive in the file).
	Provider Provider `yaml:"provider"`
	// Name identifies the backend in failover bookkeeping (default: the
	// provider).
	Name string `yaml:"name"`
	// APIKeyLiteral is the api_key: value, a literal key; prefer APIKeyEnv.
	// Read the effective key through APIKey().
	APIKeyLiteral string `yaml:"api_key"`
	// APIKeyEnv names the environment variable holding the key; when set it
	// replaces APIKeyLiteral.
	APIKeyEnv string `yaml:"api_key_env"`
	// BaseURL is the API endpoint, before the path the provider adds
	// (/chat/completions for openai and xai, /messages for anthropic,
	// /api/chat for ollama). Default: the provider's own API. Any
	// OpenAI-compatible server (vLLM, LM Studio, llama.cpp, OpenRouter, a
	// proxy) is a provider openai backend with its base_url; a backend whose
	// base_url is not its provider's own API serves any model name unless
	// SupportedModels narrows it. No query or fragment.
	BaseURL string `yaml:"base_url"`
	// Model is the model this backend asks for when an agent names none
	// ("" = the provider's default).
	Model string `yaml:"model"`
	// Priority orders backends for failover; lower is preferred (default 1).
	Priority int `yaml:"priority"`
	// RateLimitTPM is the token bucket capacity and refill per minute
	// (default 100000).
	RateLimitTPM int `yaml:"rate_limit_tpm"`
	// MaxConcurrent bounds requests in flight to this backend (default 20).
	MaxConcurrent int `yaml:"max_concurrent"`
	// Timeout bounds one request (default 120s).
	Timeout Duration `yaml:"timeout"`
	// ToolCalling is how agents served by this backend reach their peers
	// and tools: native (the provider's function calling, the default) or
	// xml (peer payloads written in the text, for models without function
	// calling). An agent's own tool_calling wins.
	ToolCalling ToolCalling `yaml:"tool_calling"`
	// ContextWindow is the context window, in tokens, of the models this
	// backend serves: an agent's history beyond it is trimmed, oldest
	// first, with a note to the model (0 = the agent's own, else a table of
	// well-known models, else 32768).
	ContextWindow int `yaml:"context_window"`
	// SupportedModels lists the model names this backend serves, compared
	// without case, for every provider. Empty: a backend on its provider's
	// own API serves the provider's model family (gpt*/o1*/o3*/o4*/chatgpt*,
	// grok*, claude*, anything for ollama); one with another base_url serves
	// any name.
	SupportedModels []string `yaml:"supported_models"`
}

// APIKey returns the backend's API key: the value of the environment
// variable APIKeyEnv when that is set (empty if the variable is unset, as in
// the reference), else the literal api_key.
func (b Backend) APIKey() string {
	if b.APIKeyEnv != "" {
		return os.Getenv(b.APIKeyEnv)
	}
	return b.APIKeyLiteral
}

// SetDefaults fills a freshly allocated backends[] entry (the decoder calls
// it before reading the entry, so what the file leaves out keeps these).
func (b *Backend) SetDefaults() {
	b.Priority = 1
	b.RateLimitTPM = 100000
	b.MaxConcurrent = 20
	b.Timeout = Duration(120 * time.Second)
}

// ToolCalling is how an agent's model reaches its peers and tools.
type ToolCalling string

// The tool calling modes.
const (
	// NativeToolCalling offers peers and tools as functions through the
	// provider's function calling (the default).
	NativeToolCalling ToolCalling = "native"
	// XMLToolCalling has the model write peer payloads as XML in its text.
	XMLToolCalling ToolCalling = "xml"
)

// Valid reports whether t is a known mode, in any case ("" is unset, also
// valid).
func (t ToolCalling) Valid() bool {
	return t == "" || strings.EqualFold(string(t), string(NativeToolCalling)) ||
		strings.EqualFold(string(t), string(XMLToolCalling))
}

// Mode returns t lower-cased: native, xml or "" (unset).
func (t ToolCalling) Mode() ToolCalling { return ToolCalling(strings.ToLower(string(t))) }
