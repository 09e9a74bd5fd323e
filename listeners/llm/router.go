package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// RouterConfig configures a Router.
type RouterConfig struct {
	// Strategy picks a backend per attempt (default failover).
	Strategy config.Strategy
	// Retries is the number of retries after the first attempt.
	Retries int
	// BaseDelay and MaxDelay bound the exponential backoff.
	BaseDelay, MaxDelay time.Duration
	// Backends are tried as the strategy says; their order breaks ties.
	Backends []*Backend
	// Logger receives retry notes (default slog.Default()).
	Logger *slog.Logger
	// Sleep waits between attempts (default: a timer, cut short by ctx).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Router sends chat requests to the backends that serve their model, with
// retries, exponential backoff with ±25 % jitter, Retry-After honoured, and
// per-backend limits. It records usage per agent, per thread and per backend.
// It is safe for concurrent use.
type Router struct {
	base   context.Context
	cancel context.CancelFunc
	cfg    RouterConfig
	log    *slog.Logger
	rr     atomic.Uint64
	usage  *usageBook // shared with the router it replaced (ShareUsage)
}

// NewRouter returns a router over cfg.Backends.
func NewRouter(cfg RouterConfig) *Router {
	if cfg.Strategy == "" {
		cfg.Strategy = config.Failover
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	base, cancel := context.WithCancel(context.Background())
	return &Router{base: base, cancel: cancel, cfg: cfg, log: cfg.Logger, usage: &usageBook{}}
}

// Close cancels every request in flight and refuses new ones; it is safe to
// call more than once.
func (r *Router) Close() { r.cancel() }

// FromConfig builds the router of an llm: section. A backend whose
// api_key_env variable is unset is skipped with a one-line warning naming
// the variable; skipped lists those backends (name → variable).
func FromConfig(c config.LLM, log *slog.Logger) (r *Router, skipped map[string]string, err error) {
	if log == nil {
		log = slog.Default()
	}
	skipped = map[string]string{}
	var bs []*Backend
	for _, bc := range c.Backends {
		key := bc.APIKey()
		if bc.APIKeyEnv != "" && os.Getenv(bc.APIKeyEnv) == "" {
			name := bc.Name
			if name == "" {
				name = string(bc.Provider)
			}
			skipped[name] = bc.APIKeyEnv
			log.Warn(fmt.Sprintf("llm backend %s skipped: %s is not set", name, bc.APIKeyEnv))
			continue
		}
		b, err := NewBackend(bc, key, nil)
		if err != nil {
			return nil, nil, err
		}
		bs = append(bs, b)
	}
	return NewRouter(RouterConfig{Strategy: c.Strategy, Retries: c.Retries, BaseDelay: c.RetryBaseDelay.D(),
		MaxDelay: c.RetryMaxDelay.D(), Backends: bs, Logger: log}), skipped, nil
}

// Backends returns the router's backends.
func (r *Router) Backends() []*Backend { return r.cfg.Backends }

// Serves reports whether some backend serves model.
func (r *Router) Serves(model string) bool {
	for _, b := range r.cfg.Backends {
		if b.Serves(model) {
			return true
		}
	}
	return false
}

// Chat sends req to a backend that serves its model, retrying as configured.
func (r *Router) Chat(ctx context.Context, req Request) (Reply, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.base, cancel)
	defer stop()
	var cands []*Backend
	for _, b := range r.cfg.Backends {
		if b.Serves(req.Model) {
			cands = append(cands, b)
		}
	}
	if len(cands) == 0 {
		return Reply{}, fmt.Errorf("%w %q (backends: %s)", ErrNoBackend, req.Model, r.names())
	}
	excluded := map[*Backend]bool{}
	tried := map[*Backend]bool{}
	var last error
	for attempt := 0; attempt <= r.cfg.Retries; attempt++ {
		b := r.pick(cands, excluded, tried, attempt)
		if b == nil {
			break
		}
		tried[b] = true
		rep, err := b.do(ctx, req)
		if err == nil {
			r.usage.record(req.Agent, req.Thread, b.name, rep.Usage)
			return rep, nil
		}
		if ctx.Err() != nil {
			return Reply{}, fmt.Errorf("llm: %w (last error: %w)", ctx.Err(), err)
		}
		last = err
		if !retryable(err) {
			excluded[b] = true
			r.log.Warn("llm backend failed", "backend", b.name, "model", req.Model, "error", err)
			continue
		}
		if attempt == r.cfg.Retries {
			break
		}
		delay := r.backoff(attempt)
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			delay = se.RetryAfter
		}
		r.log.Info("llm retry", "backend", b.name, "attempt", attempt+1, "delay", delay, "error", err)
		if err := r.cfg.Sleep(ctx, delay); err != nil {
			return Reply{}, fmt.Errorf("llm: %w (last error: %w)", err, last)
		}
	}
	return Reply{}, fmt.Errorf("llm: %w for model %q: %w", ErrAllFailed, req.Model, last)
}

// pick chooses the backend of one attempt, or nil when every candidate is
// excluded.
func (r *Router) pick(cands []*Backend, excluded, tried map[*Backend]bool, attempt int) *Backend {
	live := make([]*Backend, 0, len(cands))
	for _, b := range cands {
		if !excluded[b] {
			live = append(live, b)
		}
	}
	if len(live) == 0 {
		return nil
	}
	switch r.cfg.Strategy {
	case config.RoundRobin:
		return live[(r.rr.Add(1)-1)%uint64(len(live))]
	case config.LeastLoaded:
		best := live[0]
		for _, b := range live[1:] {
			if b.load() < best.load() {
				best = b
			}
		}
		return best
	}
	sort.SliceStable(live, func(i, j int) bool { return live[i].priority < live[j].priority })
	if attempt > 0 {
		for _, b := range live {
			if !tried[b] {
				return b
			}
		}
	}
	return live[0]
}

// backoff is min(base·2^attempt, max) with ±25 % jitter.
func (r *Router) backoff(attempt int) time.Duration {
	d := r.cfg.BaseDelay << min(attempt, 30)
	if d > r.cfg.MaxDelay || d <= 0 {
		d = r.cfg.MaxDelay
	}
	return time.Duration(float64(d) * (0.75 + rand.Float64()/2))
}

func (r *Router) names() string {
	if len(r.cfg.Backends) == 0 {
		return "none configured"
	}
	ns := make([]string, len(r.cfg.Backends))
	for i, b := range r.cfg.Backends {
		ns[i] = b.name
	}
	return strings.Join(ns, ", ")
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// usageBook is the router's usage ledger.
type usageBook struct {
	mu       sync.Mutex
	agents   map[string]Usage
	threads  map[string]Usage
	backends map[string]Usage
}

func (u *usageBook) record(agent, thread, backend string, v Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.agents == nil {
		u.agents, u.threads, u.backends = map[string]Usage{}, map[string]Usage{}, map[string]Usage{}
	}
	if agent != "" {
		u.agents[agent] = u.agents[agent].add(v)
	}
	if thread != "" {
		u.threads[thread] = u.threads[thread].add(v)
	}
	u.backends[backend] = u.backends[backend].add(v)
}
