package route

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// DefaultLimit is how many candidates a plan lists when the caller asks for
// none.
const DefaultLimit = 5

// MaxNeedBytes bounds a need: a description of what is wanted, not a
// document (a longer one is refused with ErrNeedTooLong).
const MaxNeedBytes = 16 << 10

// Dispatcher sends a filled payload to its listener through the standard
// pipeline (seed 000 §10.3 step 5). The router is advisory (§10.5): the
// dispatcher goes through the pump, whose checks — routing, the caller's
// peers, the payload's schema — still apply to what the router chose.
type Dispatcher interface {
	Dispatch(ctx context.Context, to string, payload []byte) (Dispatched, error)
}

// DispatchFunc adapts a function to Dispatcher.
type DispatchFunc func(ctx context.Context, to string, payload []byte) (Dispatched, error)

// Dispatch calls f.
func (f DispatchFunc) Dispatch(ctx context.Context, to string, payload []byte) (Dispatched, error) {
	return f(ctx, to, payload)
}

// Dispatched is what a dispatch came to.
type Dispatched struct {
	// Thread is the conversation (or thread) the message went on.
	Thread string
	// Answer is the answer's payload element, when the dispatcher waited
	// for one (nil otherwise, or when the listener ended the conversation
	// without an answer).
	Answer []byte
}

// Config configures a Router.
type Config struct {
	// Source gives the capabilities to index (required).
	Source Source
	// Embedder embeds descriptions and needs (default TFIDF).
	Embedder Embedder
	// Filler builds payloads (default Extractive).
	Filler Filler
	// Dispatcher sends them (Route only; nil: Route refuses with
	// ErrNoDispatcher).
	Dispatcher Dispatcher
	// Limit is how many candidates a plan lists (default DefaultLimit).
	Limit int
	// Logger receives index rebuilds (default slog.Default()).
	Logger *slog.Logger
}

// Router is the semantic router of seed 000 §10: an index over the
// capabilities of a Source and the pipeline rank → mask → select → fill →
// dispatch. It rebuilds its index when the source's version changes. It is
// safe for concurrent use.
type Router struct {
	cfg Config
	log *slog.Logger

	mu  sync.Mutex // one rebuild at a time
	idx *Index
}

// New returns a router over cfg.Source.
func New(cfg Config) (*Router, error) {
	if cfg.Source == nil {
		return nil, errors.New("route: no source of capabilities")
	}
	if cfg.Embedder == nil {
		cfg.Embedder = TFIDF{}
	}
	if cfg.Filler == nil {
		cfg.Filler = Extractive{}
	}
	if cfg.Limit <= 0 {
		cfg.Limit = DefaultLimit
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Router{cfg: cfg, log: log}, nil
}

// WithDispatcher returns a router sharing r's index, embedder and filler
// whose Route sends through d (an agent's own dispatch: its sender, its
// thread).
func (r *Router) WithDispatcher(d Dispatcher) *Router {
	r.mu.Lock()
	idx := r.idx
	r.mu.Unlock()
	cfg := r.cfg
	cfg.Dispatcher = d
	return &Router{cfg: cfg, log: r.log, idx: idx}
}

// Index returns the index of the source's current capabilities, built (or
// rebuilt, when the source's version changed) on demand.
func (r *Router) Index(ctx context.Context) (*Index, error) {
	v := r.cfg.Source.Version()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idx != nil && r.idx.Version() == v {
		return r.idx, nil
	}
	caps := r.cfg.Source.Capabilities()
	idx, err := BuildIndex(ctx, r.cfg.Embedder, caps, v, r.idx)
	if err != nil {
		return nil, err
	}
	r.log.Debug("route: index built", "capabilities", len(caps), "version", v)
	r.idx = idx
	return idx, nil
}

// Rank returns the capabilities mask allows, ranked by similarity to need,
// best first, at most limit (≤ 0: the router's Limit). Ranking comes
// before masking (seed 000 §10.3); only what mask allows is returned.
func (r *Router) Rank(ctx context.Context, need string, mask Mask, limit int) ([]Candidate, error) {
	if strings.TrimSpace(need) == "" {
		return nil, fmt.Errorf("route: %w", ErrEmptyNeed)
	}
	if len(need) > MaxNeedBytes {
		return nil, fmt.Errorf("route: %w (%d bytes, at most %d)", ErrNeedTooLong, len(need), MaxNeedBytes)
	}
	idx, err := r.Index(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = r.cfg.Limit
	}
	return idx.Search(ctx, need, mask, limit)
}

// Plan is the pipeline up to the dispatch: the ranked, masked candidates,
// the one selected and its payload.
type Plan struct {
	// Need is the need as given.
	Need string
	// Candidates are the capabilities the mask allows, best first.
	Candidates []Candidate
	// Selected is the first candidate: the one filled.
	Selected Candidate
	// Fill is its payload.
	Fill Filled
}

// Result is a plan and what its dispatch came to.
type Result struct {
	Plan
	// Dispatched is the dispatch's outcome.
	Dispatched Dispatched
}

// Plan ranks, masks, selects the best allowed candidate and fills its
// payload. All candidates masked (or none matching) is the refusal: a
// *RefusalError wrapping ErrNoCapability, and no filler runs. A filler
// failure is a *FillError (the plan returned still lists the candidates).
func (r *Router) Plan(ctx context.Context, need string, mask Mask) (Plan, error) {
	cands, err := r.Rank(ctx, need, mask, 0)
	if err != nil {
		return Plan{Need: need}, err
	}
	p := Plan{Need: need, Candidates: cands}
	if len(cands) == 0 {
		return p, &RefusalError{Need: need}
	}
	p.Selected = cands[0]
	f, err := r.cfg.Filler.Fill(ctx, need, p.Selected.Capability)
	if err != nil {
		return p, fmt.Errorf("route: %w", err)
	}
	p.Fill = f
	return p, nil
}

// Route runs the whole pipeline — rank, mask, select, fill, dispatch — for
// a need on behalf of a caller whose allowed set is mask: the engine of an
// agent's route tool ("I need to read main.rs"). The dispatch goes through
// the router's Dispatcher, so the pump's checks apply to it (the router is
// advisory, seed 000 §10.5). Errors: *RefusalError (nothing the caller may
// use matches), *FillError, ErrNoDispatcher, or the dispatcher's error;
// the Result holds what was done before the failure.
func (r *Router) Route(ctx context.Context, need string, mask Mask) (Result, error) {
	if r.cfg.Dispatcher == nil {
		return Result{Plan: Plan{Need: need}}, fmt.Errorf("route: %w", ErrNoDispatcher)
	}
	p, err := r.Plan(ctx, need, mask)
	res := Result{Plan: p}
	if err != nil {
		return res, err
	}
	d, err := r.cfg.Dispatcher.Dispatch(ctx, p.Selected.Name, p.Fill.Payload)
	res.Dispatched = d
	if err != nil {
		return res, fmt.Errorf("route: dispatch to %s: %w", p.Selected.Name, err)
	}
	return res, nil
}
