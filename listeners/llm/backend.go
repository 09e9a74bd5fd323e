package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// DefaultModels are the models a backend asks for when neither the request nor
// the backend's model: names one.
var DefaultModels = map[config.Provider]string{
	config.XAI:       "grok-3-mini",
	config.OpenAI:    "gpt-4o-mini",
	config.Anthropic: "claude-sonnet-4-5",
	config.Ollama:    "llama3.2",
}

// Backend is one configured provider endpoint with its limits: a token
// bucket, a bound on requests in flight and a per-request timeout.
type Backend struct {
	name      string
	kind      config.Provider
	priority  int
	provider  Provider
	bucket    *bucket
	sem       chan struct{}
	timeout   time.Duration
	supported []string
	active    atomic.Int64
}

// NewBackend builds the backend a llm.backends[] entry describes, with key as
// its API key. client nil means a default *http.Client (no client-side
// timeout: the backend's timeout bounds each request through its context).
func NewBackend(c config.Backend, key string, client *http.Client) (*Backend, error) {
	if !c.Provider.Valid() {
		return nil, fmt.Errorf("llm: unknown provider %q (want xai, anthropic, openai or ollama)", c.Provider)
	}
	if client == nil {
		client = &http.Client{}
	}
	name := c.Name
	if name == "" {
		name = string(c.Provider)
	}
	base := c.BaseURL
	if base == "" {
		base = c.Provider.DefaultBaseURL()
	}
	model := c.Model
	if model == "" {
		model = DefaultModels[c.Provider]
	}
	e := endpoint{name: name, url: base, headers: http.Header{}, client: client}
	b := &Backend{name: name, kind: c.Provider, priority: c.Priority, timeout: c.Timeout.D(),
		supported: c.SupportedModels, bucket: newBucket(max(c.RateLimitTPM, 1), time.Now),
		sem: make(chan struct{}, max(c.MaxConcurrent, 1))}
	switch c.Provider {
	case config.OpenAI, config.XAI:
		b.provider = newChatCompletions(e, model, key)
	case config.Anthropic:
		b.provider = newMessagesAPI(e, model, key)
	case config.Ollama:
		b.provider = newOllamaChat(e, model)
	}
	return b, nil
}

// Name returns the backend's name.
func (b *Backend) Name() string { return b.name }

// Serves reports whether the backend serves model: "" is any backend's
// default; supported_models, when set, is the list for every provider (Q18);
// otherwise the provider's model family (grok*, gpt*/o1*/o3*/o4*/chatgpt*,
// claude*; ollama serves any model it is asked for).
func (b *Backend) Serves(model string) bool {
	if model == "" {
		return true
	}
	if len(b.supported) > 0 {
		for _, m := range b.supported {
			if strings.EqualFold(m, model) {
				return true
			}
		}
		return false
	}
	return ServesByDefault(b.kind, model)
}

// ServesByDefault reports whether a provider without supported_models serves
// model.
func ServesByDefault(p config.Provider, model string) bool {
	m := strings.ToLower(model)
	switch p {
	case config.XAI:
		return strings.HasPrefix(m, "grok")
	case config.OpenAI:
		for _, pre := range []string{"gpt", "o1", "o3", "o4", "chatgpt"} {
			if strings.HasPrefix(m, pre) {
				return true
			}
		}
	case config.Anthropic:
		return strings.HasPrefix(m, "claude")
	case config.Ollama:
		return true
	}
	return false
}

// load is the share of the backend's concurrency in use.
func (b *Backend) load() float64 { return float64(b.active.Load()) / float64(cap(b.sem)) }

// do sends one request under the backend's bucket, concurrency limit and
// timeout; the timeout bounds the waits for the bucket and for a free slot
// too, so a request never waits forever.
func (b *Backend) do(ctx context.Context, r Request) (Reply, error) {
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	est := estimateTokens(r)
	if err := b.bucket.acquire(ctx, est); err != nil {
		return Reply{}, fmt.Errorf("%s: %w", b.name, err)
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		b.bucket.settle(-est)
		return Reply{}, fmt.Errorf("%s: waiting for max_concurrent: %w", b.name, ctx.Err())
	}
	b.active.Add(1)
	defer func() {
		b.active.Add(-1)
		<-b.sem
	}()
	rep, err := b.provider.Chat(ctx, r)
	if err != nil {
		b.bucket.settle(-est)
		return Reply{}, err
	}
	b.bucket.settle(rep.Usage.Total() - est)
	return rep, nil
}
