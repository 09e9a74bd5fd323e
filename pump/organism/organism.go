// Package organism assembles a running organism from organism.yaml: it loads the
// configuration and .env, builds the kernel registries and the pump, resolves
// every listener through the catalog of compiled-in listeners (errors cite
// file:line), registers the system listeners first, and sends the boot message.
//
// A Go program embeds an organism in four steps: it builds one with Load (an
// organism.yaml file), New (a configuration parsed with config.Parse or built
// in code; nil for the defaults) — adding listeners of its own, either
// registered in a catalog for the configuration to name (catalog.Register,
// Options.Catalog) or given directly (Options.Listeners, Func) — then Start,
// Ask (send a message and wait for the conversation's answer) and Shutdown.
// While it runs, the program may stop work (OnConversation, then Pump.Cancel
// or Pump.Kill; Governance().HaltListener and ResumeListener), decide the
// calls its agents' approval lists hold (Governance().Subscribe, Decide)
// and put a changed configuration in force (Reload); Ask's doc lists the
// errors to match, and the Examples show each.
//
// The package also holds the organism's client facade (client*.go): Backend
// is what a client — the line console, a bus session — needs of an organism
// (Sender, Directory, ThreadViewer, Feed and the optional Governor,
// Rememberer and UsageReporter); Local implements it in process, and
// Assemble builds an organism with its printed and streamed output wired to
// one. pump/console's Remote implements it over the main bus's /ws.
package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/listeners/system"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Options customises how an organism is assembled.
type Options struct {
	// Catalog resolves payload_class/handler (default catalog.Builtin()).
	// Add listeners of your own to catalog.Builtin() with catalog.Register.
	Catalog *catalog.Catalog
	// Listeners are listeners written in Go added beside the configured
	// ones (see Listener and Func).
	Listeners []Listener
	// Env gives handlers their services; Todos/Lineage/Logger are filled in.
	Env catalog.Env
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Journal records envelopes (optional).
	Journal pump.Journal
	// Storage is what the pump asks, before it takes a new external
	// message, whether the storage can commit now (pump.Options.Storage);
	// nil: the data directory's store, else the Journal when it can tell.
	Storage pump.Storage
	// Threads, Todos and Context replace the in-memory registries (durable ones).
	Threads *registry.Threads
	Todos   *registry.TodoRegistry
	Context *registry.ContextBuffer
	// Clock returns the current time (default time.Now).
	Clock func() time.Time
	// ShutdownTimeout bounds Shutdown's drain: how long work in flight may
	// take to finish before the handlers still running are cancelled
	// (default, and zero or negative: 10 s; pump.Options.ShutdownTimeout).
	// Shutdown's ctx bounds it too, whichever ends first.
	ShutdownTimeout time.Duration
	// DataDir, when set, makes the organism durable: the store in that
	// directory is opened (and closed on Shutdown), journals every envelope
	// unless journal.enabled is false, persists the kernel registries and
	// restores them at assembly. See durable.go.
	DataDir string
	// Store is an already open store to use instead of DataDir (the caller
	// keeps ownership and closes it after Shutdown).
	Store *store.Store
	// WasmCache is the compilation cache of wasm listeners (default: one in
	// the data directory, else in memory); the caller keeps ownership.
	WasmCache wazero.CompilationCache
	// Observer, when set, sees the pump's stage timings, of every message
	// or of one in ObserveEvery (pump.Options).
	Observer     pump.StageObserver
	ObserveEvery int
	// OnLink is told when a gateway's link comes up or goes down (default:
	// logged).
	OnLink func(event, gateway, detail string)
	// GatewayObserver, when set, sees the gateways' envelopes, refusals
	// and call round trips (observe.Metrics; federation.Options.Observer).
	GatewayObserver federation.Observer
	// GatewayTraces, when set, continues a federation peer's trace in the
	// conversation its call begins (observe.Tracer;
	// federation.Options.Traces). The gateways' calls carry the caller's
	// trace when Observer is a tracer (pump.HandlerContexter).
	GatewayTraces federation.TraceJoiner
	// MetaRemote marks federation peers for meta introspection (see
	// MetaRemoteFunc); nil means no sender is a federation peer.
	MetaRemote MetaRemoteFunc
	// MetaOperators are senders that are the operator's own local clients
	// (the stdio client of xmlpipe mcp, whose <from> is "mcp"): meta
	// introspection treats them as authenticated, as a logged-in user.
	MetaOperators []string
	// GovernanceObserver, when set, is told of every governance decision
	// (observe.Metrics counts them).
	GovernanceObserver GovernanceObserver
	// LoopControlObserver, when set, sees the AEIOU loop-control events:
	// decisions, ignored tokens, lints, mints (observe.Metrics counts them).
	LoopControlObserver aeiou.Observer
}

// Organism is a configured pump with its listeners.
type Organism struct {
	// Config is the configuration the organism was assembled with; after
	// a reload, CurrentConfig is the one in force.
	Config *config.Organism
	// Pump is the organism's pump: Send, Ask, Subscribe, Cancel, Kill. Halt
	// its listeners through Governance (HaltListener, Halt), which names
	// who did it; a halt made with Pump.HaltListener or Pump.Halt is
	// recorded all the same (logged, told to Governance's subscribers,
	// kept across a restart) as made by "pump".
	Pump *pump.Pump
	// Federation runs the gateways (nil without gateways:).
	Federation *federation.Manager
	// BootThread is the thread of the boot message (after Start).
	BootThread string
	// LLM is the router of the llm: section; nil when no backend is usable
	// (no backend configured, or every api_key_env variable unset). It is
	// the router assembly built: a reload that changes the llm: section
	// puts a new one in force, which shares its usage ledger.
	LLM      *llm.Router
	router   *llm.Router
	layer    *llmLayer
	log      *slog.Logger
	durable  *durable
	recovery *recovery
	wasm     *wasmSet
	closers  *closers
	// catalog, env, threads and history resolve listeners added while
	// running (AddListener).
	catalog *catalog.Catalog
	env     catalog.Env
	threads *registry.Threads
	history *registry.ContextBuffer
	// calls records the LLM calls of every router the organism uses.
	calls *callBook
	// interims routes agents' interim text to the Asks that watch it.
	interims interimHub
	// meta is what the core meta listeners answer with (nil: meta
	// disabled).
	meta *metaGate

	// What reloads change (reload.go). mu guards router, layer, env,
	// units, extra, oldRouters and stopped; reloadMu lets one reload run
	// at a time, and shutdown wait for it.
	mu       sync.Mutex
	reloadMu sync.Mutex
	cur      atomic.Pointer[config.Organism]
	// units are the configured listeners as built, by lower-cased entry
	// name; extra the listeners added while running (AddListener), which
	// a reload leaves alone.
	units map[string]*unit
	extra map[string]bool
	// completer and policy are the catalog listeners' LLM completer and
	// the tools' tool_config (nil when Options.Env supplied its own).
	completer *liveCompleter
	policy    *livePolicy
	// oldRouters are routers a reload replaced; their requests may still
	// run for pinned conversations, so they close at shutdown.
	oldRouters []*llm.Router
	late       *gatewayAgents
	stopped    bool
	// routing is the semantic router (routing.go).
	routing routing
	// gov is the guardian, the approvals and the halt (governance.go).
	gov *Governance
	// shutMu guards shutting; shutDone is closed when the first shutdown
	// has released everything the organism owns.
	shutMu   sync.Mutex
	shutting bool
	shutDone chan struct{}
}

// SystemListeners are the organism's own listeners, registered before any
// configured one (python-reference §4.6).
var SystemListeners = []config.Listener{
	{Name: "system.boot", PayloadClass: "system.Boot", Handler: "system.Boot", Description: "Logs the organism's boot"},
	{Name: "system.todo", PayloadClass: "system.TodoUntil", Handler: "system.TodoUntil", Description: "Registers a todo watcher"},
	{Name: "system.todo-complete", PayloadClass: "system.TodoComplete", Handler: "system.TodoComplete", Description: "Closes a todo watcher"},
}

// Load reads path (and its .env: the nearest walking up from the file, as
// config.FindDotEnv) and assembles the organism. The
// file may name the listeners of Options.Listeners as it names its own (an
// agent's peers): it is read with config.LoadWith.
func Load(path string, opts Options) (*Organism, error) {
	if err := config.LoadDotEnvFor(path); err != nil {
		return nil, err
	}
	cfg, err := config.LoadWith(path, goListenerNames(opts.Listeners))
	if err != nil {
		return nil, err
	}
	return New(cfg, opts)
}

// New assembles an organism from a loaded configuration (config.Load,
// config.Parse, or one built in code from config.Default); nil stands for
// config.Default() with its data_dir resolved as config.Parse resolves it
// for a file in the working directory: no listeners but the organism's own
// and Options.Listeners, in memory unless Options.DataDir is set.
func New(cfg *config.Organism, opts Options) (*Organism, error) {
	if cfg == nil {
		cfg = config.Default()
		if abs, err := filepath.Abs(cfg.Organism.DataDir); err == nil {
			cfg.Organism.DataDir = abs
		}
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Builtin()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	d, err := openDurable(cfg, &opts)
	if err != nil {
		return nil, err
	}
	o, err := assemble(cfg, opts, d)
	if err != nil && d != nil {
		err = errors.Join(err, d.close())
	}
	return o, err
}

// assemble builds the registries, the pump and the listeners.
func assemble(cfg *config.Organism, opts Options, d *durable) (*Organism, error) {
	if err := checkToolConfigs(cfg, opts.Catalog, toolDataDir(cfg, d)); err != nil {
		return nil, err
	}
	if err := checkRouting(cfg); err != nil {
		return nil, err
	}
	var sinks *storeSinks
	if d != nil {
		sinks = &storeSinks{s: d.store, log: opts.Logger}
	}
	threads := opts.Threads
	if threads == nil {
		tc := registry.ThreadsConfig{Organism: cfg.Organism.Name, TTL: cfg.Platform.ThreadTTL.D(), Clock: opts.Clock,
			Logger: opts.Logger}
		if sinks != nil {
			tc.Sink = sinks
		}
		threads = registry.NewThreads(tc)
	}
	todos := opts.Todos
	if todos == nil {
		tc := registry.TodoConfig{Lineage: threads, Clock: opts.Clock}
		if sinks != nil {
			tc.Sink = sinks
		}
		todos = registry.NewTodoRegistry(tc)
	}
	cb := opts.Context
	if cb == nil {
		cc := registry.ContextConfig{
			MaxSlotsPerThread: cfg.Platform.ContextBuffer.MaxSlotsPerThread,
			MaxThreads:        cfg.Platform.ContextBuffer.MaxThreads,
			TTL:               time.Duration(cfg.Platform.ContextBuffer.TTLHours) * time.Hour,
			NoteTTL:           cfg.Platform.ContextBuffer.NoteTTL.D(),
			MaxNotes:          cfg.Platform.ContextBuffer.MaxNotes,
			Clock:             opts.Clock,
		}
		if sinks != nil {
			cc.Sink = sinks
		}
		var err error
		cb, err = registry.NewContextBuffer(cc)
		if err != nil {
			return nil, err
		}
	}
	if d != nil && opts.Threads == nil && opts.Todos == nil && opts.Context == nil {
		if err := sinks.restoreRegistries(threads, todos, cb); err != nil {
			return nil, fmt.Errorf("organism: restore kernel state from %s: %w", d.store.Dir(), err)
		}
	}
	var kills pump.KillJournal
	if d != nil {
		// A kill is final whether or not the journal is enabled: the
		// store keeps it, as it keeps the threads (DESIGN §7).
		kills = storeJournal{s: d.store, log: opts.Logger}
	}
	var eras pump.ProfileEraJournal
	if d != nil {
		// What each profile was when a conversation began survives a
		// restart with the conversation (seed 000 §8.5).
		ej, err := newEraJournal(d.store, opts.Logger)
		if err != nil {
			return nil, err
		}
		eras = ej
	}
	// While the store cannot commit (a full disk) new external messages
	// are refused before they are read: nothing is handled that the
	// journal cannot keep (pump.Options.Storage).
	storage := opts.Storage
	switch js, ok := opts.Journal.(pump.Storage); {
	case storage != nil:
	case d != nil:
		storage = d.store
	case ok:
		storage = js
	}
	p, err := pump.New(pump.Options{
		Organism:               cfg.Organism.Name,
		MaxBytes:               cfg.Organism.MaxMessageBytes,
		MaxConcurrentPipelines: cfg.MaxConcurrentPipelines,
		MaxConcurrentHandlers:  cfg.MaxConcurrentHandlers,
		MaxConcurrentPerAgent:  cfg.MaxConcurrentPerAgent,
		MaxChainDepth:          cfg.MaxChainDepth,
		MaxInFlight:            cfg.MaxInFlight,
		AdmitWait:              admitWait(cfg.AdmitWait.D()),
		MaxQueueWait:           admitWait(cfg.MaxQueueWait.D()),
		Scheduling:             pump.Scheduling(cfg.ThreadScheduling),
		Threads:                threads,
		Todos:                  todos,
		Context:                cb,
		Journal:                opts.Journal,
		Storage:                storage,
		Kills:                  kills,
		ProfileEras:            eras,
		Logger:                 opts.Logger,
		Clock:                  opts.Clock,
		ShutdownTimeout:        opts.ShutdownTimeout,
		Observer:               opts.Observer,
		ObserveEvery:           opts.ObserveEvery,
	})
	if err != nil {
		return nil, err
	}
	var st *store.Store
	if d != nil {
		st = d.store
	}
	gov, err := newGovernance(cfg, p, st, opts)
	if err != nil {
		return nil, err
	}
	layer, err := newLLMLayer(cfg, opts.Logger)
	if err != nil {
		return nil, err
	}
	threads.OnEnd(threadUsageEnder(layer.router, threads, p.Context()))
	if d != nil && opts.Threads == nil {
		if err := restoreThreadUsage(layer.router, d.store, threads, cb); err != nil {
			layer.router.Close()
			return nil, fmt.Errorf("organism: restore thread token usage from %s: %w", d.store.Dir(), err)
		}
	}
	calls := newCallBook(nil, opts.Logger)
	if d != nil {
		calls = d.calls
	}
	calls.threads = threads
	layer.router.SetOnCall(calls.observe)
	env := opts.Env
	env.Todos, env.Lineage = todos, threads
	var policy *livePolicy
	if env.Tools == nil {
		policy = newLivePolicy(newToolPolicy(cfg, toolDataDir(cfg, d)))
		env.Tools = policy
	}
	if env.Callers == nil {
		// An agent caller is left out: the pump turns a result into its
		// text itself (a reply to an agent: its JSON form), keeping the result's
		// XML for the constitution's rules, which are written against it.
		env.Callers = tools.CallersFunc(func(name string) (*xmlpipe.PayloadType, bool) {
			l, ok := p.Lookup(name)
			return l.Payload, ok && l.Payload != nil && !l.Agent
		})
	}
	if env.DataDir == "" && d != nil {
		env.DataDir = d.store.Dir()
	}
	closers := &closers{}
	if env.AtShutdown == nil {
		env.AtShutdown = closers.add
	}
	if env.Stores == nil {
		env.Stores = catalog.NewStores() // one key_value store for all its listeners, reloads included
	}
	implicit, err := toolListeners(cfg, opts.Catalog)
	if err != nil {
		return nil, err
	}
	if env.Logger == nil {
		env.Logger = opts.Logger
	}
	if env.Progress == nil {
		// A mounted MCP tool's progress reaches the Ask waiting for its
		// conversation (WithInterim, an MCP client's progress) as an
		// agent's interim text does.
		log := env.Logger
		env.Progress = func(thread, listener, text string) {
			if o := layer.org.p.Load(); o != nil {
				o.interims.show(o.Pump.Threads(), log, listener, thread, text)
			}
		}
	}
	var completer *liveCompleter
	if env.LLM == nil {
		completer = &liveCompleter{}
		if layer.usable() {
			completer.cur.Store(gov.withConstitutions(layer.completer()))
			env.LLM = completer
		}
	}
	var errs []error
	late := &gatewayAgents{}
	fed, err := newFederation(cfg, opts, d, p, late, callerNotice(env.Print, &layer.org, opts.Logger))
	if err != nil {
		layer.router.Close()
		return nil, err
	}
	ws := newWasmSet(opts, d)
	ws.guard(cfg.Organism.DataDir, env.DataDir)
	if d != nil {
		ws.guard(d.store.Dir())
	}
	for _, lc := range SystemListeners {
		if err := register(p, opts.Catalog, env, ws, lc, fixedLocator(lc.Name), true, nil); err != nil {
			errs = append(errs, err)
		}
	}
	mg, err := registerMeta(p, cfg, opts, d)
	if err != nil {
		errs = append(errs, err)
	}
	if err := gov.mem.register(p, cfg); err != nil {
		errs = append(errs, err)
	}
	units := map[string]*unit{} // what each entry built, for reloads (reload.go)
	for i, lc := range cfg.Listeners {
		pos := cfg.Pos(fmt.Sprintf("listeners[%d]", i)).String()
		late.note(lc, cfg)
		u := &unit{lc: lc, kind: unitKindOf(lc, false), names: []string{lc.Name}}
		lc.Peers = expandPeers(lc.Peers, fed)
		lc = withTimeout(cfg, lc)
		if err := layer.checkAgent(i, lc); err != nil {
			errs = append(errs, err)
			continue
		}
		if lc.Type == config.MCPListener {
			m, err := mountMCP(p, env, lc, pos+": listener "+lc.Name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u.mount, u.names = m, m.names()
			units[unitKey(lc.Name)] = u
			continue
		}
		if lc.YAMLAgent() {
			l, err := layer.agentListener(lc, p, threads, cb, env, opts.Logger)
			if err == nil {
				err = p.Register(gov.constituted(l, cfg, lc))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: listener %s: %w", pos, lc.Name, named(err)))
				continue
			}
			u.prompt = l.Prompt
			if j, err := checkCallParams(l, lc); err != nil {
				errs = append(errs, callParamsError(cfg, i, j, lc, err))
			} else if err := registerCall(p, lc, callTimeout(gov, cfg, lc), u, opts.Logger); err != nil {
				errs = append(errs, fmt.Errorf("%s: listener %s: %w", callPos(cfg, i), lc.Name, named(err)))
			}
			units[unitKey(lc.Name)] = u
			continue
		}
		if lc.Type == config.WasmListener {
			if err := ws.checkDir(lc.Capabilities.Dir); err != nil {
				errs = append(errs, fmt.Errorf("%s: listener %s: %w", cfg.Pos(fmt.Sprintf("listeners[%d].capabilities.dir", i)), lc.Name, err))
				continue
			}
			u.stamp = wasmStamp(lc)
		}
		if err := register(p, opts.Catalog, env, ws, lc, entryLocator(cfg, i, lc.Name), false, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		u.wasm = ws.get(lc.Name)
		target, _ := p.Lookup(lc.Name)
		if j, err := checkCallParams(target, lc); err != nil {
			errs = append(errs, callParamsError(cfg, i, j, lc, err))
		} else if err := registerCall(p, lc, callTimeout(gov, cfg, lc), u, opts.Logger); err != nil {
			errs = append(errs, fmt.Errorf("%s: listener %s: %w", callPos(cfg, i), lc.Name, named(err)))
		}
		units[unitKey(lc.Name)] = u
	}
	for _, lc := range implicit {
		lc = withTimeout(cfg, lc)
		if err := register(p, opts.Catalog, env, ws, lc, fixedLocator("tool "+lc.Name), false, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		units[unitKey(lc.Name)] = &unit{lc: lc, kind: toolUnit, names: []string{lc.Name}}
	}
	extra := map[string]bool{} // listeners a reload leaves alone
	errs = append(errs, registerGo(p, cfg, opts.Listeners, extra)...)
	if err := installProfiles(p, cfg); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		layer.router.Close()
		if fed != nil {
			err = errors.Join(err, fed.Close())
		}
		return nil, errors.Join(err, ws.close(context.Background()), closers.close())
	}
	o := &Organism{Config: cfg, Pump: p, log: opts.Logger, durable: d, router: layer.router, layer: layer, wasm: ws,
		closers: closers, catalog: opts.Catalog, env: env, threads: threads, history: cb, Federation: fed,
		units: units, extra: extra, completer: completer, policy: policy, late: late, calls: calls, gov: gov,
		meta: mg}
	o.cur.Store(cfg)
	layer.org.p.Store(o)
	for _, w := range cfg.Warnings() {
		opts.Logger.Warn("config: " + w)
	}
	for _, w := range unservedExports(cfg, p) {
		opts.Logger.Warn("federation: export not served: " + w)
	}
	for _, w := range unmatchedProfileNames(cfg, p) {
		opts.Logger.Warn("profiles: " + w)
	}
	if layer.usable() {
		o.LLM = layer.router
	}
	return o, nil
}

// register resolves lc (a catalog listener, or a wasm one whose module is
// the file at its module path, or module when not nil) and registers it;
// at locates its errors.
func register(p *pump.Pump, cat *catalog.Catalog, env catalog.Env, ws *wasmSet, lc config.Listener, at locator,
	sys bool, module []byte) error {
	l, wl, err := resolveListener(cat, env, ws, lc, at, module)
	if err != nil {
		return err
	}
	if sys {
		err = p.RegisterSystem(l)
	} else {
		err = p.AddListener(l) // Register before Start
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", at(""), named(err))
		if wl != nil { // never reachable: its module goes now
			err = errors.Join(err, wl.Close(context.Background()))
		}
		return err
	}
	if wl != nil {
		return ws.add(lc.Name, wl)
	}
	return nil
}

// resolveListener builds the pump listener of lc — a catalog listener, or a
// wasm one whose module is module when not nil, else the file at its
// module path — without registering it; at locates its errors, each at
// the key it concerns. A wasm listener's module is returned too: the
// caller registers it with the wasm set once the listener is registered,
// or closes it.
func resolveListener(cat *catalog.Catalog, env catalog.Env, ws *wasmSet, lc config.Listener, at locator,
	module []byte) (pump.Listener, *wasm.Listener, error) {
	var (
		pt  *xmlpipe.PayloadType
		rt  *xmlpipe.PayloadType // the declared response, if any
		h   xmlpipe.Handler
		wl  *wasm.Listener
		err error
	)
	if lc.Type == config.WasmListener {
		if wl, err = ws.open(cat, env, lc, module); err != nil {
			return pump.Listener{}, nil, at.wrap(err)
		}
		pt, h, rt = wl.Payload(), wl, wl.Response()
	} else {
		if pt, err = cat.PayloadType(lc.PayloadClass); err != nil {
			err = nearest(err, catalog.ErrUnknownPayload, lc.PayloadClass, cat.PayloadNames())
			return pump.Listener{}, nil, fmt.Errorf("%s: payload_class: %w", at("payload_class"), err)
		}
		if h, err = cat.Handler(lc.Handler, pt, env); err != nil {
			err = nearest(err, catalog.ErrUnknownHandler, lc.Handler, cat.HandlerNames())
			return pump.Listener{}, nil, fmt.Errorf("%s: handler: %w", at("handler"), err)
		}
		if rt, err = cat.Response(lc.Handler); err != nil {
			return pump.Listener{}, nil, fmt.Errorf("%s: handler: %w", at("handler"), err)
		}
	}
	return pump.Listener{Name: lc.Name, Description: lc.Description, Payload: pt, Response: rt, Handler: h, Agent: lc.Agent,
		Peers: append(append([]string(nil), lc.Peers...), lc.Tools...), Broadcast: lc.Broadcast, Prompt: lc.Prompt,
		Workers: lc.MaxConcurrent, MaxMessagesPerTurn: lc.MaxMessagesPerTurn, Timeout: lc.Timeout.D(), Profile: lc.Profile}, wl, nil
}

// Start starts the pump and sends the boot message to system.boot.
func (o *Organism) Start() error {
	if err := o.Pump.Start(); err != nil {
		return err
	}
	if err := o.gov.start(); err != nil { // before recovery re-delivers held messages
		return err
	}
	if err := o.startDurable(); err != nil {
		return err
	}
	if o.Federation != nil {
		o.Federation.Start()
	}
	n := uint(len(o.Pump.Listeners()))
	thread, err := o.Pump.SendSystem("system.boot", &system.Boot{OrganismName: o.Config.Organism.Name,
		Timestamp: time.Now().UTC(), ListenerCount: n})
	if err != nil {
		return fmt.Errorf("organism: boot: %w", err)
	}
	o.BootThread = thread
	o.warnUserProfiles(o.CurrentConfig())
	return nil
}

// Shutdown drains and stops the pump, then stops the retention sweeper and
// closes the store the organism opened. The drain — new messages refused,
// work in flight finishing — lasts until ctx ends or Options.ShutdownTimeout
// passes (default 10 s), whichever is first; then the handlers still
// running are cancelled (cause pump.ErrDrainTimedOut), the Asks still
// waiting fail wrapping pump.ErrClosed, and the error says which bound
// ran out (errors.Is finds context.DeadlineExceeded). A call while another
// shutdown runs (or after it) waits for that one to finish, bounded by its
// ctx, and returns nil or ctx's error; the first call reports the
// shutdown's errors.
func (o *Organism) Shutdown(ctx context.Context) error {
	return o.shutdown(ctx, true, o.Pump.Shutdown)
}

// ShutdownNow stops without draining (pump.Pump.ShutdownNow): running
// handlers and model requests are cancelled and queued messages are left in
// the journal undelivered, for recovery to re-deliver at the next start;
// then it stops the sweeper and closes the store like Shutdown. ctx bounds
// the wait for handlers that ignore their cancellation.
func (o *Organism) ShutdownNow(ctx context.Context) error {
	o.closeRouters()
	return o.shutdown(ctx, false, o.Pump.ShutdownNow)
}

// Stop is Shutdown when graceful, else ShutdownNow: what a shutdown request
// (an OOB shutdown's mode, the bus API's stop) asks for.
func (o *Organism) Stop(ctx context.Context, graceful bool) error {
	if graceful {
		return o.Shutdown(ctx)
	}
	return o.ShutdownNow(ctx)
}

// shutdown stops the pump with stopPump, then what the organism owns. It
// runs once: a later call only stops the pump too (the pump's own
// shutdown runs once and makes every caller wait for it; ShutdownNow cuts
// a graceful drain short), then waits for the first call to release what
// the organism owns — so the store is never closed under a drain that
// still journals.
func (o *Organism) shutdown(ctx context.Context, graceful bool, stopPump func(context.Context) error) error {
	o.shutMu.Lock()
	if o.shutting {
		o.shutMu.Unlock()
		if err := stopPump(ctx); err != nil {
			return err
		}
		select {
		case <-o.shutDone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	o.shutting, o.shutDone = true, make(chan struct{})
	o.shutMu.Unlock()
	defer close(o.shutDone)
	o.stopReloads()
	o.stopRecovery()
	defer o.gov.stop()
	if o.Federation != nil {
		// Calls waiting on a peer end now (their records stay for the next
		// start), so they cannot hold the drain: neither answered nor
		// failed, their journaled messages are left undelivered
		// (pump.ErrStopping), and re-delivered at the next start they
		// adopt their calls and take the answers; answers of conversations
		// still draining wait in the outbox. Before the pump stops: the
		// links drain (bounded), and the acknowledgements they owe wait
		// for the journal records the pump writes.
		drain := ctx
		if !graceful { // stopping now: the links close without draining
			var cancel context.CancelFunc
			drain, cancel = context.WithCancel(ctx)
			cancel()
		}
		o.Federation.StopContext(drain)
	}
	// Model requests still running when ctx ends are cancelled, so a hung
	// provider cannot hold the shutdown.
	stop := context.AfterFunc(ctx, o.closeRouters)
	err := stopPump(ctx)
	stop()
	o.closeRouters()
	var ferr error
	if o.Federation != nil {
		ferr = o.Federation.Close()
	}
	err = errors.Join(err, ferr, o.wasm.close(ctx), o.closers.close())
	if o.durable != nil {
		err = errors.Join(err, o.durable.close())
	}
	return err
}
