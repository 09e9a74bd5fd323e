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
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// RouterConfig configures a Router.
type RouterConfig struct {
	// Strategy picks a backend per attempt (default failover).
	Strategy config.Strategy
	// Retries is the number of retries after the first attempt.
	Retries int
	// BaseDelay and MaxDelay bound the exponential backoff (a provider's
	// Retry-After is honoured as given, up to a day, by the attempts on
	// the backend that gave it; failover to another one does not wait it).
	// A wait that would end past the call's deadline is not begun: the
	// call fails at once with ErrRetryTooLate.
	BaseDelay, MaxDelay time.Duration
	// Backends are tried as the strategy says; their order breaks ties.
	Backends []*Backend
	// Logger receives retry notes (default slog.Default()).
	Logger *slog.Logger
	// Sleep waits between attempts (default: a timer, cut short by ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// OnCall, when set, receives a record of every attempt (see
	// Router.SetOnCall).
	OnCall func(CallRecord)
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
	onCall atomic.Pointer[func(CallRecord)]
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
	r := &Router{base: base, cancel: cancel, cfg: cfg, log: cfg.Logger, usage: &usageBook{}}
	r.SetOnCall(cfg.OnCall)
	return r
}

// SetOnCall sets (nil: removes) the observer that receives a CallRecord for
// every attempt of every Chat — each HTTP call to a backend, completed or
// failed — so that calls can be journaled and shown per call. It may be
// called at any time. The observer runs on the caller's goroutine right
// after the attempt, before a retry or Chat's return: it must be quick and
// must not call the Router.
func (r *Router) SetOnCall(fn func(CallRecord)) {
	if fn == nil {
		r.onCall.Store(nil)
		return
	}
	r.onCall.Store(&fn)
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

// ModelTraits returns what the backend that would serve model first says
// about it (the first by priority of those that serve it): the model it
// asks for, its tool_calling and context_window. Zero when none serves it.
func (r *Router) ModelTraits(model string) ModelTraits {
	var best *Backend
	for _, b := range r.cfg.Backends {
		if b.Serves(model) && (best == nil || b.priority < best.priority) {
			best = b
		}
	}
	if best == nil {
		return ModelTraits{Model: model}
	}
	return ModelTraits{Model: modelOr(Request{Model: model}, best.model), ToolCalling: best.tools, ContextWindow: best.window}
}

// Chat sends req to a backend that serves its model, retrying as
// configured: a 429, a 5xx, a transport error or a malformed reply is
// retried (after the backoff, or the provider's Retry-After), on another
// backend when the strategy says so; a 401/403, another 4xx, a request too
// large for the bucket or an invalid request is not retried on that
// backend. When a streamed attempt fails after sending deltas and another
// attempt follows, OnDelta gets a Delta{Restart: true} first.
//
// The error of a failed Chat is a *CallError naming the model and the
// backend once; errors.Is finds its cause (ErrRateLimited, ErrAuth,
// ErrMalformed, context.Canceled, …) and ErrAllFailed when the retries ran
// out. A request that fails Validate is refused with ErrInvalidRequest
// before any attempt, one whose model no backend serves with ErrNoBackend.
func (r *Router) Chat(ctx context.Context, req Request) (Reply, error) {
	if err := req.Validate(); err != nil {
		return Reply{}, fmt.Errorf("llm: %w", err)
	}
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
		return Reply{}, fmt.Errorf("llm: %w %q (backends: %s)", ErrNoBackend, req.Model, r.names())
	}
	excluded := map[*Backend]bool{}
	tried := map[*Backend]bool{}
	lastErr := map[*Backend]error{}
	var order []*Backend // backends in the order first tried
	fail := func(b *Backend, attempts int, err error, exhausted bool) error {
		ce := &CallError{Model: modelOr(req, b.model), Backend: b.name, Attempts: attempts, Err: err, exhausted: exhausted}
		for _, o := range order {
			if o != b {
				ce.Others = append(ce.Others, BackendError{Backend: o.name, Err: lastErr[o]})
			}
		}
		return ce
	}
	var last *Backend
	attempts := 0
	streamed := false
	// resumeAt is when a backend that answered with Retry-After may be
	// asked again: it holds back that backend alone, never the one the
	// strategy turns to instead.
	resumeAt := map[*Backend]time.Time{}
	pause := false // the last attempt failed in a way worth retrying
	for attempt := 0; attempt <= r.cfg.Retries; attempt++ {
		b := r.pick(cands, excluded, tried, attempt)
		if b == nil {
			break
		}
		if pause {
			if err := r.pause(ctx, req, last, b, attempt-1, lastErr[last], resumeAt); err != nil {
				return Reply{}, fail(last, attempts, fmt.Errorf("%w (after: %w)", err, lastErr[last]), false)
			}
			pause = false
		}
		if !tried[b] {
			order = append(order, b)
		}
		tried[b], last = true, b
		attempts++
		areq := req
		if on := req.OnDelta; on != nil {
			if streamed {
				on(Delta{Restart: true})
				streamed = false
			}
			areq.OnDelta = func(d Delta) {
				streamed = true
				on(d)
			}
		}
		rec := CallRecord{Backend: b.name, Model: modelOr(req, b.model), Agent: req.Agent, Thread: req.Thread,
			Attempt: attempt + 1, Streamed: req.OnDelta != nil}
		rep, err := b.call(ctx, areq, &rec)
		if err == nil {
			rec.Model, rec.Usage, rec.FinishReason, rec.ToolCalls = rep.Model, rep.Usage, rep.FinishReason, len(rep.ToolCalls)
			r.observe(rec)
			r.usage.record(req.Agent, req.Thread, b.name, rep.Usage)
			if rec.UsageEstimated && b.toldEstimated.CompareAndSwap(false, true) {
				r.log.Warn("llm backend reports no token usage: budgets and rate_limit_tpm count estimates "+
					"(4 bytes a token)", "backend", b.name, "model", rec.Model)
			}
			return rep, nil
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (after: %w)", ctx.Err(), err)
		}
		rec.Err = err
		rec.Aborted = errors.Is(ctx.Err(), context.Canceled)
		r.observe(rec)
		lastErr[b] = err
		if ctx.Err() != nil {
			return Reply{}, fail(b, attempts, err, false)
		}
		if !retryable(err) {
			excluded[b] = true
			r.log.Warn("llm backend failed", "backend", b.name, "model", rec.Model, "agent", req.Agent,
				"thread", req.Thread, "error", err)
			continue
		}
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			resumeAt[b] = time.Now().Add(se.RetryAfter)
		}
		pause = true
	}
	return Reply{}, fail(last, attempts, lastErr[last], true)
}

// pause waits before the next attempt, on next, after failed's attempt
// (numbered from 0) failed with err: failed's own Retry-After when the
// attempt goes to it again, the Retry-After next gave earlier in this call
// while it lasts, else the backoff.
func (r *Router) pause(ctx context.Context, req Request, failed, next *Backend, attempt int, err error,
	resumeAt map[*Backend]time.Time) error {
	delay, why := r.backoff(attempt), "backoff"
	var se *StatusError
	switch at, ok := resumeAt[next]; {
	case next == failed && errors.As(err, &se) && se.RetryAfter > 0:
		delay, why = se.RetryAfter, "Retry-After"
	case ok:
		delay, why = max(time.Until(at), 0), "Retry-After"
	}
	if end, ok := ctx.Deadline(); ok && time.Now().Add(delay).After(end) {
		// Waiting could only end in the deadline: the caller hears now why.
		return fmt.Errorf("llm: %w: backend %s would be asked again in %v (%s), the call has %v left",
			ErrRetryTooLate, next.name, delay.Round(time.Second), why, max(time.Until(end), 0).Round(time.Second))
	}
	r.log.Info("llm retry", "backend", failed.name, "model", modelOr(req, failed.model), "attempt", attempt+1,
		"next", next.name, "delay", delay, "agent", req.Agent, "thread", req.Thread, "error", err)
	return r.cfg.Sleep(ctx, delay)
}

// observe hands rec to the OnCall observer, if any.
func (r *Router) observe(rec CallRecord) {
	if fn := r.onCall.Load(); fn != nil {
		(*fn)(rec)
	}
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
