package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Routing is the routing: section: semantic routing (seed 000 §10), which
// finds the listener that does what a caller describes in words
// (`xmlpipe route`, an agent's route tool):
//
//	routing:
//	  embeddings: tfidf                 # the default: built in, no network
//	  # embeddings: {provider: openai, model: text-embedding-3-small, api_key_env: OPENAI_API_KEY}
//	  # embeddings: {provider: ollama, model: nomic-embed-text}
//	  fill_models: [grok-3-mini, grok-3]  # cheap first; served by the llm: backends
type Routing struct {
	// Embeddings is the embedding provider.
	Embeddings Embeddings `yaml:"embeddings"`
	// FillModels are the models that build a payload from a description,
	// cheapest first: the next is asked when an answer does not validate.
	// They are served by the llm: backends. Empty: payloads are filled by
	// the built-in extractive filler (simple payloads only).
	FillModels []string `yaml:"fill_models"`
}

// EmbeddingProvider names an embedding provider.
type EmbeddingProvider string

// The embedding providers.
const (
	// EmbedTFIDF is the built-in TF-IDF embedder (the default).
	EmbedTFIDF EmbeddingProvider = "tfidf"
	// EmbedOpenAI is an OpenAI embeddings endpoint (POST base_url/embeddings;
	// any OpenAI-compatible server).
	EmbedOpenAI EmbeddingProvider = "openai"
	// EmbedOllama is an Ollama server's /api/embed.
	EmbedOllama EmbeddingProvider = "ollama"
)

// DefaultBaseURL returns the provider's default endpoint ("" for tfidf or
// an unknown provider).
func (p EmbeddingProvider) DefaultBaseURL() string {
	switch p {
	case EmbedOpenAI:
		return "https://api.openai.com/v1"
	case EmbedOllama:
		return "http://localhost:11434"
	}
	return ""
}

// Valid reports whether p is a known provider.
func (p EmbeddingProvider) Valid() bool {
	return p == EmbedTFIDF || p == EmbedOpenAI || p == EmbedOllama
}

// Embeddings is routing.embeddings: a provider name alone (tfidf), or
// {provider, model, base_url, api_key_env, timeout} for an endpoint.
type Embeddings struct {
	// Provider is tfidf (the default), openai or ollama.
	Provider EmbeddingProvider `yaml:"provider"`
	// Model is the embedding model (openai and ollama; required there).
	Model string `yaml:"model"`
	// BaseURL is the endpoint's base (default: the provider's own API:
	// https://api.openai.com/v1, http://localhost:11434). No query or
	// fragment.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the key, sent as a
	// bearer token (none when unset).
	APIKeyEnv string `yaml:"api_key_env"`
	// Timeout bounds one request to the endpoint (default 30s).
	Timeout Duration `yaml:"timeout"`
}

// decodeScalar reads the one-word form: the provider's name.
func (e *Embeddings) decodeScalar(n *yaml.Node) error {
	if n.ShortTag() != "!!str" {
		return fmt.Errorf("want a provider name (tfidf) or {provider: openai|ollama, model: …}, got %s", describe(n))
	}
	e.Provider = EmbeddingProvider(n.Value)
	return nil
}

// Endpoint reports whether the embeddings come from an HTTP endpoint.
func (e Embeddings) Endpoint() bool { return e.Provider == EmbedOpenAI || e.Provider == EmbedOllama }

func defaultRouting() Routing {
	return Routing{Embeddings: Embeddings{Provider: EmbedTFIDF, Timeout: Duration(30 * time.Second)}}
}

func (o *Organism) normalizeRouting() {
	e := &o.Routing.Embeddings
	e.Provider = EmbeddingProvider(strings.ToLower(strings.TrimSpace(string(e.Provider))))
	if e.BaseURL == "" {
		e.BaseURL = e.Provider.DefaultBaseURL()
	}
}

func (o *Organism) checkRouting(r *reporter) {
	e := o.Routing.Embeddings
	const path = "routing.embeddings"
	switch {
	case !e.Provider.Valid():
		r.add(path+".provider", "unknown embeddings provider %q (want tfidf, openai or ollama)", e.Provider)
	case e.Provider == EmbedTFIDF:
		for _, k := range []struct{ key, value string }{{"model", e.Model}, {"base_url", e.BaseURL}, {"api_key_env", e.APIKeyEnv}} {
			if k.value != "" {
				r.add(path+"."+k.key, "%s is for an openai or ollama provider; tfidf is built in", k.key)
			}
		}
	default:
		if strings.TrimSpace(e.Model) == "" {
			r.missing(path, "model")
		}
		u, err := url.Parse(e.BaseURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			r.add(path+".base_url", "want an http:// or https:// URL, got %q", e.BaseURL)
		case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(e.BaseURL, "?") || strings.HasSuffix(e.BaseURL, "#"):
			r.add(path+".base_url", "want a URL without query or fragment (the provider's path is appended to it), got %q", e.BaseURL)
		}
	}
	r.positiveDuration(path+".timeout", e.Timeout)
	seen := map[string]int{}
	for i, m := range o.Routing.FillModels {
		mp := childIndex("routing.fill_models", i)
		key := strings.ToLower(strings.TrimSpace(m))
		if key == "" {
			r.add(mp, "empty model name")
			continue
		}
		if first, dup := seen[key]; dup {
			r.add(mp, "%q is listed twice (also fill_models[%d])", m, first)
			continue
		}
		seen[key] = i
	}
}
