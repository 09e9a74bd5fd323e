package llm

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
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
	model     string
	baseURL   string
	custom    bool // base_url is not the provider's own API
	priority  int
	provider  Provider
	bucket    *bucket
	sem       chan struct{}
	timeout   time.Duration
	supported []string
	active    atomic.Int64
	// tools and window are the backend's tool_calling and context_window.
	tools  ToolCalling
	window int
	// toldEstimated is set once the log said the backend reports no usage.
	toldEstimated atomic.Bool
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
	b := &Backend{name: name, kind: c.Provider, model: model, baseURL: base, custom: !sameURL(base, c.Provider.DefaultBaseURL()),
		priority: c.Priority, timeout: c.Timeout.D(), supported: c.SupportedModels,
		tools: ToolCalling(c.ToolCalling.Mode()), window: c.ContextWindow,
		bucket: newBucket(max(c.RateLimitTPM, 1), time.Now), sem: make(chan struct{}, max(c.MaxConcurrent, 1))}
	switch c.Provider {
	case config.OpenAI, config.XAI:
		cc := newChatCompletions(e, model, key)
		// OpenAI's own API wants max_completion_tokens (its reasoning models
		// refuse max_tokens); xAI and compatible servers take max_tokens.
		cc.completionTokens = c.Provider == config.OpenAI && !b.custom
		b.provider = cc
	case config.Anthropic:
		b.provider = newMessagesAPI(e, model, key)
	case config.Ollama:
		b.provider = newOllamaChat(e, model)
	}
	return b, nil
}

// sameURL reports whether two base URLs name the same endpoint (case of
// scheme and host, and a trailing slash, aside).
func sameURL(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimRight(a, "/"))
	ub, err2 := url.Parse(strings.TrimRight(b, "/"))
	if err1 != nil || err2 != nil {
		return a == b
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) && ua.Path == ub.Path &&
		ua.RawQuery == ub.RawQuery
}

// Name returns the backend's name.
func (b *Backend) Name() string { return b.name }

// Provider returns the backend's provider kind.
func (b *Backend) Provider() config.Provider { return b.kind }

// Model returns the model the backend asks for when a request names none.
func (b *Backend) Model() string { return b.model }

// BaseURL returns the endpoint the backend's requests go to (before the
// provider's path, e.g. /chat/completions).
func (b *Backend) BaseURL() string { return b.baseURL }

// Serves reports whether the backend serves model: "" is any backend's
// default; supported_models, when set, is the list for every provider
// (compared without case, Q18); otherwise a backend whose base_url is not
// its provider's own API (an OpenAI-compatible server, a proxy, a local
// Ollama elsewhere) serves any model name, and one on the provider's own
// API serves the provider's model family (ServesByDefault).
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
	return b.custom || ServesByDefault(b.kind, model)
}

// ServesByDefault reports whether a provider's own API, without
// supported_models, serves model: grok* (xai), gpt*/o1*/o3*/o4*/chatgpt*
// (openai), claude* (anthropic), anything (ollama).
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

// do sends one request under the backend's limits (see call).
func (b *Backend) do(ctx context.Context, r Request) (Reply, error) {
	var rec CallRecord
	return b.call(ctx, r, &rec)
}

// call sends one request under the backend's bucket, concurrency limit and
// timeout, and fills rec's timing (Start, Wait, FirstToken, Duration); the
// timeout bounds the waits for the bucket and for a free slot too, so a
// request never waits forever. The reply carries Duration and FirstToken.
func (b *Backend) call(ctx context.Context, r Request, rec *CallRecord) (Reply, error) {
	rec.Start = time.Now()
	defer func() {
		if rec.Duration == 0 {
			rec.Duration = time.Since(rec.Start)
		}
	}()
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	est := estimateTokens(r)
	if err := b.bucket.acquire(ctx, est); err != nil {
		return Reply{}, err
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		b.bucket.settle(-est)
		return Reply{}, fmt.Errorf("waiting for max_concurrent: %w", ctx.Err())
	}
	b.active.Add(1)
	defer func() {
		b.active.Add(-1)
		<-b.sem
	}()
	sent := time.Now()
	rec.Wait = sent.Sub(rec.Start)
	streamedBytes := 0 // of this attempt's text and tool calls
	if on := r.OnDelta; on != nil {
		r.OnDelta = func(d Delta) {
			if rec.FirstToken == 0 {
				rec.FirstToken = max(time.Since(sent), time.Nanosecond)
			}
			streamedBytes += len(d.Text)
			if d.ToolCall != nil {
				streamedBytes += len(d.ToolCall.Name) + len(d.ToolCall.Arguments)
			}
			on(d)
		}
	}
	rep, err := b.provider.Chat(ctx, r)
	if err != nil {
		if rec.FirstToken > 0 {
			// The model read the prompt and wrote part of its reply
			// before the call failed or was aborted: the record (and
			// the bucket) keep what that spent, by estimate (no usage
			// came).
			rec.Usage = Usage{PromptTokens: inputTokens(r), CompletionTokens: streamedBytes/4 + 1}
			rec.UsageEstimated = true
		}
		b.bucket.settle(rec.Usage.Total() - est)
		return Reply{}, err
	}
	if rep.Usage.PromptTokens == 0 && rep.Usage.CompletionTokens == 0 {
		// A server that reports no usage (some compatible servers never
		// do in a stream) is counted by estimate, so that budgets and
		// rate_limit_tpm still hold.
		rep.Usage.PromptTokens, rep.Usage.CompletionTokens = inputTokens(r), outputTokens(rep)
		rec.UsageEstimated = true
	}
	b.bucket.settle(rep.Usage.Total() - est)
	rec.Duration = max(time.Since(rec.Start), time.Nanosecond)
	rep.Duration, rep.FirstToken = rec.Duration, rec.FirstToken
	return rep, nil
}
