package organism

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// ErrReloadRefused is wrapped by the error of every reload that was not
// applied: the organism goes on with the configuration it had.
var ErrReloadRefused = errors.New("reload refused")

// ReloadableKeys are the top-level keys of organism.yaml a reload applies
// while the organism runs; gateways too, by stopping and starting the
// gateways it adds, removes or changes (planGateways). Every other key
// (organism.port, organism.bind, organism.data_dir, organism.tls,
// organism.identity, oob, journal, auth, …) takes effect at the next start
// only: a reload whose configuration changes one of them is refused,
// naming the key.
var ReloadableKeys = []string{"listeners", "llm", "budgets", "prompts", "routing", "profiles", "memory"}

// ReloadReport says what a reload changed, by listeners[] entry name (and
// implicit tool name).
type ReloadReport struct {
	// Added, Removed and Changed are the entries the reload added, removed
	// and replaced by a new version.
	Added, Removed, Changed []string
	// Unchanged counts the entries left exactly as they were.
	Unchanged int
	// LLM reports a new LLM router (the llm: section, or the value of a
	// backend's api_key_env variable, changed).
	LLM bool
	// GatewaysAdded, GatewaysRemoved and GatewaysChanged are the gateways[]
	// entries the reload started, stopped and relinked with their new
	// settings, by name.
	GatewaysAdded, GatewaysRemoved, GatewaysChanged []string
}

// Plan is a reload checked and built but not applied: the new
// configuration's added and changed listeners are built (catalog resolved,
// agents set up, WASM modules compiled, MCP servers connected) while the
// running organism is untouched. Apply puts it in force; Discard releases
// what it built. Until one of them is called, other reloads (and
// Shutdown) wait.
type Plan struct {
	o      *Organism
	cfg    *config.Organism
	report ReloadReport
	// units is the organism's units once applied; built those made for it
	// (added or changed) and retiring the old ones they replace or that go.
	units    map[string]*unit
	built    []*unit
	retiring []*unit
	// remove and add are the pump's change.
	remove []string
	add    []pump.Listener
	// where locates each added pump listener in the configuration.
	where map[string]string
	// layer is the new configuration's LLM layer; fresh when its router is
	// new (else it shares the running one).
	layer *llmLayer
	fresh bool
	// gateways is the change of the gateways (nil: none, or no
	// federation).
	gateways *federation.GatewayChange
	done     bool
}

// Report returns what the plan changes.
func (p *Plan) Report() ReloadReport { return p.report }

// Reload puts cfg in force as a diff of the running configuration
// (PlanReload, then Apply): running conversations finish on the routing
// table they pinned, listeners that did not change are left exactly as
// they are (not rebuilt, not drained), connected clients are not
// disturbed. A configuration that cannot be applied is refused with an
// error wrapping ErrReloadRefused, and nothing changes.
func (o *Organism) Reload(cfg *config.Organism) (ReloadReport, error) {
	p, err := o.PlanReload(cfg)
	if err != nil {
		return ReloadReport{}, err
	}
	return p.Apply()
}

// CurrentConfig returns the configuration in force: the one assembled,
// then the last one a reload applied.
func (o *Organism) CurrentConfig() *config.Organism { return o.cur.Load() }

// PlanReload checks cfg against the running configuration and builds what
// it adds or changes, without touching the running organism. Listeners
// added while running (AddListener) are not part of the diff: they stay.
// It refuses (with an error wrapping ErrReloadRefused, located with
// file:line where it can be) a configuration that is invalid, changes a
// key that applies at the next start only (see ReloadableKeys), names a
// listener added while running, or one of whose new or changed listeners
// cannot be built. The caller must Apply or Discard the plan.
func (o *Organism) PlanReload(cfg *config.Organism) (*Plan, error) {
	o.reloadMu.Lock()
	p, err := o.plan(cfg)
	if err != nil {
		o.reloadMu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}
	return p, nil
}

// planEntry is one listener of the new configuration.
type planEntry struct {
	lc    config.Listener // as written
	kind  unitKind
	index int    // in listeners[], -1 for an implicit tool
	where string // "file:line: listener name" or "tool name"
}

// plan computes and builds the diff (reloadMu held).
func (o *Organism) plan(cfg *config.Organism) (*Plan, error) {
	if cfg == nil {
		return nil, errors.New("no configuration")
	}
	o.mu.Lock()
	stopped, oldLayer, oldUnits, extra := o.stopped, o.layer, copyMap(o.units), copyMap(o.extra)
	o.mu.Unlock()
	if stopped {
		return nil, pump.ErrClosed
	}
	// Its peers may name the listeners given in Go (Options.Listeners)
	// and those added while running, as the running organism's may.
	if err := cfg.ValidateWith(slices.Sorted(maps.Keys(extra))); err != nil {
		return nil, err
	}
	if err := checkToolConfigs(cfg, o.catalog, toolDataDir(cfg, o.durable)); err != nil {
		return nil, err
	}
	if err := checkRouting(cfg); err != nil {
		return nil, err
	}
	if err := o.gov.checkReload(cfg); err != nil {
		return nil, err
	}
	old := o.CurrentConfig()
	if keys := restartKeys(old, cfg); len(keys) > 0 {
		var errs []error
		for _, k := range keys {
			errs = append(errs, fmt.Errorf("%s: %s changed: it applies only at the next start of the organism", cfg.Pos(k), k))
		}
		return nil, errors.Join(errs...)
	}
	// Gateways registered while running (OOB) stay, as they are not in the
	// file (on a copy: the caller's configuration is left as it is).
	c := *cfg
	cfg = &c
	cfg.Gateways = slices.Clone(cfg.Gateways)
	for _, g := range old.Gateways {
		if g.TrustedKey != nil {
			cfg.Gateways = append(cfg.Gateways, g)
		}
	}
	gateways, err := o.planGateways(old, cfg)
	if err != nil {
		return nil, err
	}
	layer, fresh, err := o.reloadLayer(oldLayer, cfg)
	if err != nil {
		return nil, err
	}
	p := &Plan{o: o, cfg: cfg, units: map[string]*unit{}, where: map[string]string{}, layer: layer, fresh: fresh,
		gateways: gateways}
	p.report.LLM = fresh
	if gateways != nil {
		p.report.GatewaysAdded, p.report.GatewaysRemoved, p.report.GatewaysChanged = gateways.Added, gateways.Removed,
			gateways.Changed
	}
	fail := func(err error) (*Plan, error) {
		p.release()
		return nil, err
	}
	entries, err := o.entries(cfg, layer, extra)
	if err != nil {
		return fail(err)
	}
	// Which entries changed.
	flip := o.completer != nil && oldLayer.usable() != layer.usable()
	var build []planEntry
	seen := map[string]bool{}
	for _, e := range entries {
		key := unitKey(e.lc.Name)
		seen[key] = true
		u := oldUnits[key]
		switch {
		case u == nil:
			p.report.Added = append(p.report.Added, e.lc.Name)
			build = append(build, e)
		case u.changed(e, old, cfg, fresh, flip):
			p.report.Changed = append(p.report.Changed, e.lc.Name)
			p.retiring = append(p.retiring, u)
			build = append(build, e)
		default:
			p.units[key] = u
		}
	}
	for key, u := range oldUnits {
		if !seen[key] {
			p.report.Removed = append(p.report.Removed, u.lc.Name)
			p.retiring = append(p.retiring, u)
		}
	}
	slices.Sort(p.report.Removed)
	// An unchanged agent whose peers changed gets a new version too: its
	// usage instructions describe them.
	touched := p.touchedNames(build)
	for _, e := range entries {
		u := p.units[unitKey(e.lc.Name)]
		if u == nil || !e.lc.Agent || !touched(o.expandPeers(append(slices.Clone(e.lc.Peers), e.lc.Tools...))) {
			continue
		}
		delete(p.units, unitKey(e.lc.Name))
		p.report.Changed = append(p.report.Changed, e.lc.Name)
		p.retiring = append(p.retiring, u)
		build = append(build, e)
	}
	p.report.Unchanged = len(p.units)
	if err := p.build(build); err != nil {
		return fail(err)
	}
	for _, u := range p.retiring {
		for _, n := range u.names {
			if _, ok := o.Pump.Lookup(n); ok {
				p.remove = append(p.remove, n)
			}
		}
	}
	return p, nil
}

// copyMap copies a map.
func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// entries lists the new configuration's listeners (and the implicit tools
// its agents list), refusing an agent no backend can serve and a name
// taken by a listener added while running.
func (o *Organism) entries(cfg *config.Organism, layer *llmLayer, extra map[string]bool) ([]planEntry, error) {
	implicit, err := toolListeners(cfg, o.catalog)
	if err != nil {
		return nil, err
	}
	var out []planEntry
	var errs []error
	for i, lc := range cfg.Listeners {
		path := fmt.Sprintf("listeners[%d]", i)
		e := planEntry{lc: lc, kind: unitKindOf(lc, false), index: i,
			where: cfg.Pos(path).String() + ": listener " + lc.Name}
		if extra[unitKey(lc.Name)] {
			errs = append(errs, fmt.Errorf("%s: the name is taken by a listener registered while running (unregister it first)",
				e.where))
			continue
		}
		if err := layer.checkAgent(i, lc); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, e)
	}
	for _, lc := range implicit {
		if extra[unitKey(lc.Name)] {
			errs = append(errs, fmt.Errorf("tool %s: the name is taken by a listener registered while running (unregister it first)",
				lc.Name))
			continue
		}
		out = append(out, planEntry{lc: withTimeout(cfg, lc), kind: toolUnit, index: -1, where: "tool " + lc.Name})
	}
	return out, errors.Join(errs...)
}

// locator locates the errors about the entry at their keys' lines in cfg,
// the configuration it is an entry of.
func (e planEntry) locator(cfg *config.Organism) locator {
	if e.index < 0 {
		return fixedLocator(e.where)
	}
	return entryLocator(cfg, e.index, e.lc.Name)
}

// changed reports whether the unit u, built from an earlier configuration
// (old), must be built again for entry e of cfg: its entry differs, its
// files changed (wasm), its server's tool list changed (mcp), its router,
// prompt or budgets changed (agents), or
// whether an LLM backend is usable at all changed (catalog listeners get
// the completer then or not).
func (u *unit) changed(e planEntry, old, cfg *config.Organism, fresh, flip bool) bool {
	if u.partial.Load() || u.kind != e.kind || !reflect.DeepEqual(u.lc, e.lc) {
		return true
	}
	switch u.kind {
	case wasmUnit:
		return wasmStamp(e.lc) != u.stamp
	case agentUnit:
		prompt, err := cfg.ResolvePrompt(e.lc.Prompt)
		return fresh || err != nil || prompt != u.prompt || !reflect.DeepEqual(old.Budgets, cfg.Budgets)
	case catalogUnit:
		return flip
	case mountUnit:
		// Its server offers another tool list than the mounted one.
		return u.mount != nil && u.mount.m.Stale()
	}
	return false
}

// touchedNames returns a test of whether a peers list names a listener the
// plan adds, replaces or removes (a mount's tools by their <name>. prefix).
func (p *Plan) touchedNames(build []planEntry) func(peers []string) bool {
	names := map[string]bool{}
	var prefixes []string
	note := func(name string, kind unitKind) {
		names[strings.ToLower(name)] = true
		if kind == mountUnit {
			prefixes = append(prefixes, strings.ToLower(name)+".")
		}
	}
	for _, e := range build {
		note(e.lc.Name, e.kind)
	}
	for _, u := range p.retiring {
		note(u.lc.Name, u.kind)
		for _, n := range u.names {
			names[strings.ToLower(n)] = true
		}
	}
	return func(peers []string) bool {
		for _, peer := range peers {
			lp := strings.ToLower(peer)
			if names[lp] {
				return true
			}
			for _, pre := range prefixes {
				if strings.HasPrefix(lp, pre) {
					return true
				}
			}
		}
		return false
	}
}

// expandPeers is expandPeers with the organism's federation.
func (o *Organism) expandPeers(peers []string) []string { return expandPeers(peers, o.Federation) }

// reloadLayer is the LLM layer of cfg: the running router when the llm:
// section and its backends' keys are unchanged, else a new router (fresh)
// sharing the running one's usage ledger, so budgets hold.
func (o *Organism) reloadLayer(oldLayer *llmLayer, cfg *config.Organism) (*llmLayer, bool, error) {
	if reflect.DeepEqual(oldLayer.cfg.LLM, cfg.LLM) && keysDigest(cfg.LLM) == oldLayer.keys {
		return &llmLayer{cfg: cfg, router: oldLayer.router, skipped: oldLayer.skipped, keys: oldLayer.keys,
			live: oldLayer.live}, false, nil
	}
	layer, err := newLLMLayer(cfg, o.log)
	if err != nil {
		return nil, false, err
	}
	layer.org.p.Store(o)
	layer.live = oldLayer.live // put in force by Apply
	layer.router.ShareUsage(oldLayer.router)
	layer.router.SetOnCall(o.calls.observe)
	return layer, true, nil
}

// build builds the listeners of the entries to add or replace.
func (p *Plan) build(entries []planEntry) error {
	o := p.o
	o.mu.Lock()
	env := o.env
	o.mu.Unlock()
	if o.completer != nil {
		env.LLM = nil
		if p.layer.usable() {
			env.LLM = o.completer
		}
	}
	var errs []error
	for _, e := range entries {
		u := &unit{lc: e.lc, kind: e.kind, names: []string{e.lc.Name}}
		lc := e.lc
		lc.Peers = o.expandPeers(lc.Peers)
		lc = withTimeout(p.cfg, lc)
		switch e.kind {
		case mountUnit:
			m, ls, err := connectMount(env, lc, e.where)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u.mount, u.names = m, m.names()
			p.add = append(p.add, ls...)
		case agentUnit:
			l, err := p.layer.agentListener(lc, o.Pump, o.threads, o.history, env, o.log)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", e.where, err))
				continue
			}
			l = o.gov.constituted(l, p.cfg, e.lc)
			u.prompt = l.Prompt
			p.add = append(p.add, l)
		default:
			if e.kind == wasmUnit {
				u.stamp = wasmStamp(lc)
			}
			l, wl, err := resolveListener(o.catalog, env, o.wasm, lc, e.locator(p.cfg), nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u.wasm = wl
			p.add = append(p.add, l)
		}
		if e.kind != mountUnit && !lc.Callable.IsZero() {
			if j, err := checkCallParams(p.add[len(p.add)-1], lc); err != nil {
				errs = append(errs, callParamsError(p.cfg, e.index, j, lc, err))
				continue
			}
			l, err := callListener(o.Pump, lc, callTimeout(o.gov, p.cfg, lc), o.log)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", e.where, err))
				continue
			}
			u.names = append(u.names, l.Name)
			p.add = append(p.add, l)
		}
		for _, n := range u.names {
			p.where[strings.ToLower(n)] = e.where
		}
		if e.kind != mountUnit && !lc.Callable.IsZero() && e.index >= 0 {
			p.where[strings.ToLower(config.CallName(lc.Name))] = callPos(p.cfg, e.index) + ": listener " + lc.Name
		}
		p.built = append(p.built, u)
		p.units[unitKey(e.lc.Name)] = u
	}
	return errors.Join(errs...)
}

// Apply puts the plan in force: one routing change (pump.Pump.Change)
// adds, replaces and removes the listeners; the new LLM router, prompts,
// budgets and tool_config apply to what starts from now on. A removed or
// replaced listener serves the conversations that pinned it until they
// complete; then its WASM module or MCP session is released. When the
// routing change is refused (a root tag taken by a listener added while
// running, say), nothing changes and the error wraps ErrReloadRefused.
func (p *Plan) Apply() (ReloadReport, error) {
	if p.done {
		return ReloadReport{}, fmt.Errorf("%w: the plan was already applied or discarded", ErrReloadRefused)
	}
	defer p.finish()
	o := p.o
	completer := o.swapCompleter(p.layer)
	// Every agent version, the running conversations' included, calls the
	// new router and checks the new budgets from now on.
	live := p.layer.live.set(p.layer.router, p.layer.budget())
	retired, err := o.Pump.Change(pump.ListenerChange{Remove: p.remove, Add: p.add, SetProfiles: true,
		Profiles: profileDefs(p.cfg)})
	if err != nil {
		p.layer.live.restore(live)
		o.restoreCompleter(completer)
		p.release()
		var ce *pump.ChangeError
		if errors.As(err, &ce) && p.where[strings.ToLower(ce.Listener)] != "" {
			err = fmt.Errorf("%s: %w", p.where[strings.ToLower(ce.Listener)], ce.Err) // where names it
		}
		return ReloadReport{}, fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}
	added := map[string]*wasm.Listener{}
	for _, u := range p.built {
		if u.wasm != nil {
			added[u.lc.Name] = u.wasm
		}
	}
	var retiringWasm []string
	for _, u := range p.retiring {
		if u.wasm != nil {
			retiringWasm = append(retiringWasm, u.lc.Name)
		}
	}
	swapErr := o.wasm.swap(added, retiringWasm)
	// What was added to or removed from a writable dir by hand since it
	// was counted is counted now, unchanged listeners' dirs included.
	o.wasm.recountDisks(o.log)
	for _, u := range p.retiring {
		o.releaseWhenRetired(u, retired)
	}
	o.mu.Lock()
	oldRouter := o.layer.router
	o.layer, o.router = p.layer, p.layer.router
	if p.fresh {
		o.oldRouters = append(o.oldRouters, oldRouter)
	}
	if o.completer != nil {
		o.env.LLM = nil
		if p.layer.usable() {
			o.env.LLM = o.completer
		}
	}
	o.units = p.units
	o.mu.Unlock()
	if o.policy != nil {
		o.policy.set(newToolPolicy(p.cfg, toolDataDir(p.cfg, o.durable)))
	}
	o.late.reset(p.cfg)
	o.gov.configure(p.cfg)
	o.cur.Store(p.cfg)
	if o.Federation != nil {
		// An import an operator unregistered comes back with the reload,
		// as a listener organism.yaml declares does.
		if err := o.Federation.RestoreImports(); err != nil {
			o.log.Warn("reload: an imported listener could not be restored", "error", err)
		}
	}
	if !p.gateways.Empty() {
		ctx, cancel := context.WithTimeout(context.Background(), gatewayReloadLimit)
		if err := p.gateways.Apply(ctx); err != nil {
			o.log.Warn("reload: a gateway change did not apply fully", "error", err)
		}
		cancel()
	}
	if r := p.report; o.Federation != nil && len(r.Added)+len(r.Removed)+len(r.Changed) > 0 {
		// The linked peers ask again for what they import at once.
		o.Federation.ExportsChanged()
	}
	r := p.report
	o.log.Info("reload applied", "added", r.Added, "removed", r.Removed, "changed", r.Changed,
		"unchanged", r.Unchanged, "new_llm_router", r.LLM, "gateways_added", r.GatewaysAdded,
		"gateways_removed", r.GatewaysRemoved, "gateways_changed", r.GatewaysChanged)
	o.warnUserProfiles(p.cfg)
	for _, w := range unmatchedProfileNames(p.cfg, o.Pump) {
		o.log.Warn("profiles: " + w)
	}
	return r, swapErr
}

// Discard releases what the plan built; the organism is unchanged.
func (p *Plan) Discard() {
	if p.done {
		return
	}
	p.release()
	p.finish()
}

// finish ends the plan: the next reload may start.
func (p *Plan) finish() {
	p.done = true
	p.o.reloadMu.Unlock()
}

// release closes what the plan built and never put in force.
func (p *Plan) release() {
	for _, u := range p.built {
		if u.wasm != nil {
			if err := u.wasm.Close(context.Background()); err != nil {
				p.o.log.Warn("reload: closing a module that was not used", "listener", u.lc.Name, "error", err)
			}
		}
		if u.mount != nil {
			if err := u.mount.close(); err != nil {
				p.o.log.Warn("reload: closing an MCP session that was not used", "listener", u.lc.Name, "error", err)
			}
		}
	}
	p.built = nil
	if p.fresh {
		p.layer.router.Close()
	}
}

// swapCompleter installs the completer of layer for the catalog listeners
// when it has a usable backend (before the routing change, so the
// listeners it brings find it) and returns the one it replaced.
func (o *Organism) swapCompleter(layer *llmLayer) *llm.Completer {
	if o.completer == nil {
		return nil
	}
	prev := o.completer.cur.Load()
	if layer.usable() {
		o.completer.cur.Store(o.gov.withConstitutions(layer.completer()))
	} else {
		o.completer.cur.Store(nil)
	}
	return prev
}

// restoreCompleter puts back the completer a refused change replaced.
func (o *Organism) restoreCompleter(prev *llm.Completer) {
	if o.completer != nil {
		o.completer.cur.Store(prev)
	}
}

// releaseWhenRetired closes u's module or MCP session once every listener
// of it has retired: no conversation can reach it and its handlers have
// returned (at shutdown at the latest).
func (o *Organism) releaseWhenRetired(u *unit, retired map[string]<-chan struct{}) {
	if u.wasm == nil && u.mount == nil {
		return
	}
	var chans []<-chan struct{}
	for _, n := range u.names {
		if c, ok := retired[strings.ToLower(n)]; ok {
			chans = append(chans, c)
		}
	}
	go func() {
		for _, c := range chans {
			<-c
		}
		var err error
		if u.wasm != nil {
			err = o.wasm.release(context.Background(), u.wasm)
		}
		if u.mount != nil {
			err = errors.Join(err, u.mount.close())
		}
		if err != nil {
			o.log.Warn("reload: releasing a retired listener", "listener", u.lc.Name, "error", err)
		}
	}()
}

// restartKeys lists the keys, outside ReloadableKeys and gateways
// (planGateways), whose values differ between old and cfg.
func restartKeys(old, cfg *config.Organism) []string {
	var keys []string
	diffKeys("", reflect.ValueOf(old).Elem(), reflect.ValueOf(cfg).Elem(), &keys)
	return keys
}

// diffKeys appends the yaml paths of the fields that differ between a and
// b (structs of one type), descending into sections.
func diffKeys(prefix string, a, b reflect.Value, out *[]string) {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		fa, fb := a.Field(i), b.Field(i)
		switch {
		case prefix == "" && slices.Contains(ReloadableKeys, name):
		case prefix == "" && name == "gateways": // planGateways
		case reflect.DeepEqual(fa.Interface(), fb.Interface()):
		case fa.Kind() == reflect.Struct && hasYAMLFields(fa.Type()):
			diffKeys(path, fa, fb, out)
		default:
			*out = append(*out, path)
		}
	}
}

// hasYAMLFields reports a struct with keys of its own (a section, not a
// value type).
func hasYAMLFields(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name != "" && name != "-" {
			return true
		}
	}
	return false
}

// fileGateways are the gateways written in the configuration (those
// registered over OOB carry their key instead of a file).
func fileGateways(gs []config.Gateway) []config.Gateway {
	var out []config.Gateway
	for _, g := range gs {
		if g.TrustedKey == nil {
			out = append(out, g)
		}
	}
	return out
}

// keysDigest digests the values of the backends' api_key_env variables: a
// key set, unset or changed (.env is read again on reload) makes a new
// router.
func keysDigest(c config.LLM) string {
	h := sha256.New()
	for _, b := range c.Backends {
		if b.APIKeyEnv != "" {
			v := os.Getenv(b.APIKeyEnv)
			fmt.Fprintf(h, "%s=%d:%s\x00", b.APIKeyEnv, len(v), v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// reset replaces what the agents' gateways are with cfg's.
func (a *gatewayAgents) reset(cfg *config.Organism) {
	fresh := &gatewayAgents{}
	for _, lc := range cfg.Listeners {
		fresh.note(lc, cfg)
	}
	a.mu.Lock()
	a.m = fresh.m
	a.mu.Unlock()
}

// stopReloads waits for a reload under way and refuses the next ones (at
// shutdown).
func (o *Organism) stopReloads() {
	o.reloadMu.Lock()
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
	o.reloadMu.Unlock()
}

// closeRouters cancels the requests of the LLM router in force and of those
// reloads replaced.
func (o *Organism) closeRouters() {
	o.mu.Lock()
	rs := append([]*llm.Router{o.router}, o.oldRouters...)
	o.mu.Unlock()
	for _, r := range rs {
		r.Close()
	}
}
