package organism

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/route"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// ErrUnknownProfile: a profile name the organism does not define.
var ErrUnknownProfile = errors.New("unknown profile")

// routing is the organism's semantic router (the routing: section) and
// what feeds it.
type routing struct {
	mu     sync.Mutex
	router *route.Router
	built  config.Routing // the section router was built from
	key    string         // the embeddings key it was built with
}

// PeersMask returns the mask of what the listener called agent may
// address, as the pump enforces it: an agent's peers and tools, within the
// listener's own profile (profile:, which narrows every message it sends).
// A listener that is no agent and has no profile may address anyone: its
// mask is nil (every capability).
func (o *Organism) PeersMask(agent string) (route.Mask, error) {
	l, ok := o.Pump.Lookup(agent)
	if !ok {
		return nil, fmt.Errorf("%w: %s", pump.ErrUnknownListener, agent)
	}
	var own route.Mask
	if l.Profile != "" {
		profile := l.Profile
		own = func(name string) bool { return o.Pump.ProfileReaches(profile, name) }
	}
	if !l.Agent {
		return own, nil
	}
	peers := l.Peers
	for _, info := range o.Pump.Listeners() {
		if strings.EqualFold(info.Name, l.Name) {
			peers = info.Peers
			break
		}
	}
	return route.Both(route.Allow(peers...), own), nil
}

// Router returns the organism's semantic router: an index over every
// listener but the organism's own (system.*, core.*), rebuilt when the
// routing table changes, with the embeddings and fill models of the
// routing: section in force (a reload that changes the section gets a new
// router at the next call). It ranks, masks and fills; to dispatch, give it
// a Dispatcher (Router.WithDispatcher, RouteDispatcher). An embeddings
// endpoint whose api_key_env variable is unset is an error naming it.
func (o *Organism) Router() (*route.Router, error) {
	cfg := o.CurrentConfig()
	rc := cfg.Routing
	key := ""
	if rc.Embeddings.Endpoint() && rc.Embeddings.APIKeyEnv != "" {
		key = os.Getenv(rc.Embeddings.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("%s: routing.embeddings: %s is not set", cfg.Pos("routing.embeddings.api_key_env"), rc.Embeddings.APIKeyEnv)
		}
	}
	s := &o.routing
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.router != nil && reflect.DeepEqual(s.built, rc) && s.key == key {
		return s.router, nil
	}
	var e route.Embedder = route.TFIDF{}
	if rc.Embeddings.Endpoint() {
		pc := route.ProviderConfig{BaseURL: rc.Embeddings.BaseURL, Model: rc.Embeddings.Model, APIKey: key,
			Timeout: rc.Embeddings.Timeout.D()}
		var err error
		if rc.Embeddings.Provider == config.EmbedOpenAI {
			e, err = route.NewOpenAI(pc)
		} else {
			e, err = route.NewOllama(pc)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Pos("routing.embeddings"), err)
		}
	}
	r, err := route.New(route.Config{Source: routeSource{o.Pump}, Embedder: e,
		Filler: &routeFiller{o: o, models: append([]string(nil), rc.FillModels...)}, Logger: o.log})
	if err != nil {
		return nil, err
	}
	s.router, s.built, s.key = r, rc, key
	return r, nil
}

// routeSource is the pump's routing table as the router's capabilities.
type routeSource struct{ p *pump.Pump }

// Version is the routing table's version.
func (s routeSource) Version() uint64 { return s.p.RoutesVersion() }

// Capabilities lists every listener but the organism's own, in
// registration order.
func (s routeSource) Capabilities() []route.Capability {
	var out []route.Capability
	for _, info := range s.p.Listeners() {
		if organismOwn(info.Name) {
			continue
		}
		if l, ok := s.p.Lookup(info.Name); ok && l.Payload != nil {
			out = append(out, route.Capability{Name: l.Name, Description: l.Description, Payload: l.Payload})
		}
	}
	return out
}

// routeFiller fills with the ladder of routing.fill_models served by the
// LLM router in force, or extractively when none is (no fill_models, or
// their backends' keys unset).
type routeFiller struct {
	o      *Organism
	models []string
	warn   sync.Once
}

// Fill builds c's payload from need.
func (f *routeFiller) Fill(ctx context.Context, need string, c route.Capability) (route.Filled, error) {
	if len(f.models) == 0 {
		return route.Extractive{}.Fill(ctx, need, c)
	}
	f.o.mu.Lock()
	r := f.o.router
	f.o.mu.Unlock()
	var served []string
	for _, m := range f.models {
		if r != nil && r.Serves(m) {
			served = append(served, m)
		}
	}
	if len(served) == 0 {
		f.warn.Do(func() {
			f.o.log.Warn("routing: no usable LLM backend serves routing.fill_models; payloads are filled extractively",
				"fill_models", f.models)
		})
		return route.Extractive{}.Fill(ctx, need, c)
	}
	return route.Ladder{LLM: r, Models: served, Logger: f.o.log}.Fill(ctx, need, c)
}

// checkRouting reports, with file:line, fill models no configured backend
// serves.
func checkRouting(cfg *config.Organism) error {
	var errs []error
	for i, m := range cfg.Routing.FillModels {
		path := fmt.Sprintf("routing.fill_models[%d]", i)
		switch {
		case len(cfg.LLM.Backends) == 0:
			errs = append(errs, cfg.Errorf(path, "model %q needs an LLM backend: add one under llm.backends", m))
		case !servedByConfig(cfg.LLM.Backends, m):
			errs = append(errs, cfg.Errorf(path, "model %q is served by no configured backend (backends: %s)", m,
				backendNames(cfg.LLM.Backends)))
		}
	}
	return errors.Join(errs...)
}

// RouteDispatcher returns the Dispatcher that sends a routed payload as the
// external sender from (a session identity such as "websocket:alice", or
// "console") on a new conversation, through the pump's standard pipeline —
// sender check, routing, schema validation — and waits for the
// conversation to complete: the answer is the reply addressed to from, if
// any. When ctx ends first the conversation is killed.
func (o *Organism) RouteDispatcher(from string) route.Dispatcher {
	return route.DispatchFunc(func(ctx context.Context, to string, payload []byte) (route.Dispatched, error) {
		return o.dispatchRouted(ctx, from, to, payload)
	})
}

// routeWaiter collects a routed conversation's reply and failure.
type routeWaiter struct {
	mu      sync.Mutex
	reply   []byte
	failure *pump.Event // the first <huh>, SystemError or dead letter
	killed  bool        // the conversation completed because Kill stopped it
	done    chan struct{}
	closed  bool
}

// Deliver implements pump.Outlet.
func (w *routeWaiter) Deliver(e pump.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Kind {
	case pump.EventReply:
		if w.reply == nil {
			w.reply = payloadOf(e.Envelope)
		}
	case pump.EventHuh, pump.EventDeadLetter, pump.EventSystemError:
		if w.failure == nil {
			w.failure = &e
		}
	case pump.EventComplete:
		w.killed = w.killed || e.Error == pump.KilledReason
		if !w.closed {
			w.closed = true
			close(w.done)
		}
	}
}

// dispatchRouted sends payload as from to the listener to and waits for the
// conversation to complete. A conversation that failed without a reply is a
// *pump.AskError carrying the failure's event (its kind, listener and
// diagnostics); one killed before it answered is pump.ErrConversationKilled.
func (o *Organism) dispatchRouted(ctx context.Context, from, to string, payload []byte) (route.Dispatched, error) {
	w := &routeWaiter{done: make(chan struct{})}
	conv, err := o.Pump.SendEnvelope(ctx, pump.Envelope{From: from, To: to, Payload: payload}, w)
	if err != nil {
		return route.Dispatched{}, err
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		if _, kerr := o.Pump.Kill(conv); kerr != nil {
			o.log.Debug("route: kill", "conversation", conv, "error", kerr)
		}
		return route.Dispatched{Thread: conv}, context.Cause(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	d := route.Dispatched{Thread: conv, Answer: w.reply}
	switch {
	case w.reply != nil:
		return d, nil
	case w.failure != nil:
		return d, &pump.AskError{Event: *w.failure}
	case w.killed:
		return d, pump.ErrConversationKilled
	}
	return d, nil
}

// The LLM router serves the fill ladder.
var _ route.Chatter = (*llm.Router)(nil)
