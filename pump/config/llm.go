package config

import llmconfig "github.com/xml-pipeline/xmlpipe/listeners/llm/config"

// The llm: section's types belong to the LLM listener (listeners take their
// own config types and never import the pump); the organism's configuration
// names them here, so config.LLM, config.Backend, … read as before.
type (
	// LLM is the llm: section: the router strategy and its backends.
	LLM = llmconfig.LLM
	// Strategy is the LLM router's backend selection strategy.
	Strategy = llmconfig.Strategy
	// Provider is an LLM provider kind.
	Provider = llmconfig.Provider
	// Backend is one llm.backends[] entry.
	Backend = llmconfig.Backend
	// ToolCalling is how an agent's model reaches its peers and tools.
	ToolCalling = llmconfig.ToolCalling
)

// The LLM router strategies.
const (
	// Failover tries backends in priority order (the default).
	Failover = llmconfig.Failover
	// RoundRobin spreads requests evenly across backends.
	RoundRobin = llmconfig.RoundRobin
	// LeastLoaded picks the backend with the fewest requests in flight.
	LeastLoaded = llmconfig.LeastLoaded
)

// The supported LLM providers.
const (
	// XAI is xAI's Grok API.
	XAI = llmconfig.XAI
	// Anthropic is Anthropic's Messages API.
	Anthropic = llmconfig.Anthropic
	// OpenAI is OpenAI's Chat Completions API.
	OpenAI = llmconfig.OpenAI
	// Ollama is a local Ollama server.
	Ollama = llmconfig.Ollama
)

// The tool calling modes.
const (
	// NativeToolCalling offers peers and tools as functions through the
	// provider's function calling (the default).
	NativeToolCalling = llmconfig.NativeToolCalling
	// XMLToolCalling has the model write peer payloads as XML in its text.
	XMLToolCalling = llmconfig.XMLToolCalling
)
