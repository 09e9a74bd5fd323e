package organism

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// llmLayer is the organism's LLM router and what assembly learnt building it.
type llmLayer struct {
	cfg     *config.Organism
	router  *llm.Router
	skipped map[string]string // backend name → unset api_key_env variable
	// keys digests the api_key_env values the router was built with
	// (keysDigest): a reload that finds them changed builds a new router.
	keys string
	// org is the organism, once assembled (the agents' route tools use it).
	org orgRef
	// live is the router and budgets in force, shared by every layer of
	// the organism: the agents call the model through it.
	live *liveRouter
}

// newLLMLayer builds the router of the llm: section (backends whose key
// variable is unset are skipped with a warning).
func newLLMLayer(cfg *config.Organism, log *slog.Logger) (*llmLayer, error) {
	r, skipped, err := llm.FromConfig(cfg.LLM, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Pos("llm.backends"), err)
	}
	l := &llmLayer{cfg: cfg, router: r, skipped: skipped, keys: keysDigest(cfg.LLM)}
	l.live = newLiveRouter(r, l.budget())
	return l, nil
}

// usable reports whether at least one backend can be called.
func (l *llmLayer) usable() bool { return len(l.router.Backends()) > 0 }

// completer is the greeter's Completer: the router with each agent's prompt.
func (l *llmLayer) completer() *llm.Completer {
	c := &llm.Completer{LLM: l.router, Prompts: map[string]string{}, Models: map[string]string{},
		Budget: l.budget(), Usage: l.router}
	for _, lc := range l.cfg.Listeners {
		if lc.Agent {
			prompt, _ := l.cfg.ResolvePrompt(lc.Prompt)
			c.Prompts[lc.Name], c.Models[lc.Name] = prompt, lc.Model
		}
	}
	return c
}

// checkAgent reports, with file:line, an agent whose model no configured
// backend serves, or a YAML agent left without a usable backend (naming the
// variables to set).
func (l *llmLayer) checkAgent(i int, lc config.Listener) error {
	if !lc.Agent {
		return nil
	}
	path := fmt.Sprintf("listeners[%d]", i)
	if lc.Model != "" && len(l.cfg.LLM.Backends) > 0 && !servedByConfig(l.cfg.LLM.Backends, lc.Model) {
		return fmt.Errorf("%s: listener %s: model %q is served by no configured backend (backends: %s)",
			l.cfg.Pos(path+".model"), lc.Name, lc.Model, backendNames(l.cfg.LLM.Backends))
	}
	if lb := lc.Librarian; lb != nil && lb.Model != "" && !servedByConfig(l.cfg.LLM.Backends, lb.Model) {
		return fmt.Errorf("%s: listener %s: librarian model %q is served by no configured backend (backends: %s)",
			l.cfg.Pos(path+".librarian.model"), lc.Name, lb.Model, backendNames(l.cfg.LLM.Backends))
	}
	if !lc.YAMLAgent() || l.router.Serves(lc.Model) {
		return nil
	}
	if len(l.cfg.LLM.Backends) == 0 {
		return fmt.Errorf("%s: agent %s needs an LLM backend: add one under llm.backends", l.cfg.Pos(path), lc.Name)
	}
	return fmt.Errorf("%s: agent %s has no usable LLM backend: set %s", l.cfg.Pos(path), lc.Name, l.unsetKeys(lc.Model))
}

// unsetKeys names the api_key_env variables of the skipped backends that
// would serve model ("" = any), joined with "or".
func (l *llmLayer) unsetKeys(model string) string {
	var vars []string
	for i, b := range l.cfg.LLM.Backends {
		name := b.Name
		if name == "" {
			name = string(b.Provider)
		}
		if v, ok := l.skipped[name]; ok && (model == "" || servedByConfig(l.cfg.LLM.Backends[i:i+1], model)) {
			vars = append(vars, v)
		}
	}
	return strings.Join(vars, " or ")
}

// checkLiveAgent is checkAgent for a YAML agent added while running: the
// same refusals, without a file position, wrapping ErrNoLLM when no usable
// backend serves the agent's model.
func (l *llmLayer) checkLiveAgent(lc config.Listener) error {
	switch {
	case lc.Model != "" && len(l.cfg.LLM.Backends) > 0 && !servedByConfig(l.cfg.LLM.Backends, lc.Model):
		return fmt.Errorf("%w: model %q is served by no configured backend (backends: %s)", ErrNoLLM, lc.Model,
			backendNames(l.cfg.LLM.Backends))
	case l.router.Serves(lc.Model):
		return nil
	case len(l.cfg.LLM.Backends) == 0:
		return fmt.Errorf("%w: add a backend under llm.backends and reload the organism", ErrNoLLM)
	}
	if vars := l.unsetKeys(lc.Model); vars != "" {
		return fmt.Errorf("%w: set %s (in the environment or the .env beside organism.yaml) and reload the organism", ErrNoLLM, vars)
	}
	return fmt.Errorf("%w for model %q", ErrNoLLM, lc.Model)
}

// agentListener builds the listener of a YAML agent: its text payload and
// the agent loop (its tool calling mode, context window and declared answer
// payload as the listener entry says; its backend's when it says none).
func (l *llmLayer) agentListener(lc config.Listener, p *pump.Pump, threads *registry.Threads,
	cb *registry.ContextBuffer, env catalog.Env, log *slog.Logger) (pump.Listener, error) {
	pt, err := llm.InputType(lc.Name)
	if err != nil {
		return pump.Listener{}, err
	}
	prompt, err := l.cfg.ResolvePrompt(lc.Prompt)
	if err != nil {
		return pump.Listener{}, err
	}
	var response *xmlpipe.PayloadType
	if !lc.Response.IsZero() {
		if response, err = fieldsOf(lc.Response).PayloadType(nil); err != nil {
			return pump.Listener{}, fmt.Errorf("response: %w", err)
		}
	}
	a := &llm.Agent{Name: lc.Name, Prompt: prompt, Model: lc.Model, MaxTokens: lc.MaxTokens,
		Temperature: lc.Temperature.Ptr(), MaxIterations: lc.MaxIterations, RepeatLimit: l.cfg.Budgets.RepeatLimit,
		ToolCalling: llm.ToolCalling(lc.ToolCalling.Mode()), ContextWindow: lc.ContextWindow, Response: response,
		MaxCallsPerTurn: lc.MaxMessagesPerTurn,
		Foreign:         l.foreign,
		Budget:          l.budget(),
		Budgets:         l.live.Budget,
		LLM:             l.live, Usage: l.live, History: cb, Threads: threads, Logger: log,
		Lookup: func(name string) (*xmlpipe.PayloadType, bool) {
			ln, ok := p.Lookup(name)
			return ln.Payload, ok && ln.Payload != nil
		}}
	if lc.Librarian != nil {
		a.Librarian = l.librarian(lc.Librarian, log)
	}
	if lc.Route {
		a.LocalTools = append(a.LocalTools, l.routeTool())
	}
	if stream := env.Stream; stream != nil {
		a.OnDelta = func(agent, thread, delta string, end bool) { stream(thread, agent, delta, end) }
	}
	// The agent's interim text (beside its tool calls, or of a turn its
	// loop control continued) goes to the Ask watching its conversation
	// (WithInterim), and shows as a listener's printed line.
	show := env.Print
	a.OnInterim = func(agent, thread, text string) {
		if o := l.org.p.Load(); o != nil {
			o.interims.show(o.Pump.Threads(), log, agent, thread, text)
		}
		if show != nil {
			show(thread, agent, text)
		}
	}
	return pump.Listener{Name: lc.Name, Description: lc.Description, Payload: pt, Response: response, Handler: a, Agent: true,
		Peers: append(append([]string(nil), lc.Peers...), lc.Tools...), Prompt: prompt, Workers: lc.MaxConcurrent,
		MaxMessagesPerTurn: lc.MaxMessagesPerTurn, Timeout: lc.Timeout.D(), Profile: lc.Profile}, nil
}

// foreign reports whether caller, the sender that began an agent's
// conversation and no listener, is outside the organism's own users: a
// callable's call (callSender) or a federation peer (a gateway of the
// configuration in force, else of the one the layer was built with). An
// agent tells such a caller that it halted, never why (llm.Agent.Foreign).
func (l *llmLayer) foreign(caller string) bool {
	if isCallSender(caller) {
		return true
	}
	cfg := l.cfg
	if o := l.org.p.Load(); o != nil {
		if cur := o.CurrentConfig(); cur != nil {
			cfg = cur
		}
	}
	return slices.ContainsFunc(cfg.Gateways, func(g config.Gateway) bool { return strings.EqualFold(g.Name, caller) })
}

// librarian is an agent's librarian as its librarian: block says; its
// model is served by the router.
func (l *llmLayer) librarian(c *config.Librarian, log *slog.Logger) *llm.Librarian {
	return &llm.Librarian{Model: c.Model, LLM: l.live, FoldBelow: c.FoldBelow.Or(config.DefaultFoldBelow),
		UnfoldAbove: c.UnfoldAbove.Or(config.DefaultUnfoldAbove), KeepRecent: c.KeepRecentOr(),
		MinFoldTokens: c.MinFoldTokensOr(), SummaryWords: c.SummaryWords, MaxSummaries: c.MaxSummaries,
		SummaryTimeout: c.SummaryTimeout.D(), Logger: log}
}

// budget is the budgets: section as the agents check it.
func (l *llmLayer) budget() llm.Budget {
	b := l.cfg.Budgets
	return llm.Budget{ThreadTokens: b.ThreadTokens, AgentTokens: b.AgentTokens, OnExceed: b.OnExceed}
}

func servedByConfig(bs []config.Backend, model string) bool {
	for _, bc := range bs {
		b, err := llm.NewBackend(bc, "", nil)
		if err == nil && b.Serves(model) {
			return true
		}
	}
	return false
}

func backendNames(bs []config.Backend) string {
	ns := make([]string, len(bs))
	for i, b := range bs {
		ns[i] = b.Name
		if ns[i] == "" {
			ns[i] = string(b.Provider)
		}
	}
	return strings.Join(ns, ", ")
}
