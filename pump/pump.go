package pump

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/internal/gate"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Lifecycle errors.
var (
	ErrClosed     = errors.New("pump: shut down")
	ErrNotStarted = errors.New("pump: not started")
	ErrStarted    = errors.New("pump: already started")
)

// Pump is the organism's message pump. Register listeners, Start, then Inject
// or Send (or Ask, which also awaits the conversation's answer); Shutdown
// drains in-flight work.
type Pump struct {
	opts    Options
	log     *slog.Logger
	ingress *stage.Ingress
	core    stage.CoreTypes
	// routes is the current routing snapshot (see table); routesMu orders
	// its writers. New conversations pin it; routing reads it lock-free.
	routes   atomic.Pointer[table]
	routesMu sync.Mutex
	// routesVersion counts the snapshots published (RoutesVersion).
	routesVersion atomic.Uint64
	// routesChanged is closed (and replaced) when the next snapshot is
	// published (RoutesChanged); guarded by routesMu.
	routesChanged chan struct{}
	// erasPruneAt is the length of the profile definitions' history past
	// which the next change drops the eras no conversation refers to
	// (profile_era.go); guarded by routesMu.
	erasPruneAt int
	// onHalt is the OnHaltChange hook (nil: none).
	onHalt atomic.Pointer[func(HaltChange)]
	// peersMu orders AddPeers' read-modify-write of a peer set.
	peersMu sync.Mutex
	// live are the listeners whose workers run (liveListeners).
	liveMu  sync.Mutex
	live    map[*listener]struct{}
	threads *registry.Threads
	todos   *registry.TodoRegistry
	context *registry.ContextBuffer
	journal Journal
	// killBook records kills for good (Options.Kills, else the journal's
	// KillJournal capability); nil keeps them in memory only.
	killBook KillJournal
	subs     subscribers
	// watchers see every event as it happens, before the durability gate
	// (Watch).
	watchers subscribers
	// asks are the conversations Ask waits on (ask.go).
	asks askers
	// durable is the journal's DurableJournal capability (nil without);
	// gate then holds events back until what they name is committed.
	durable DurableJournal
	gate    *gate.Gate[held]

	work *workQueue
	// slots are the global handler slots (max_concurrent_handlers), shared
	// fairly between listeners.
	slots *handlerSlots
	// ingressSlots bounds how many envelopes are in the ingress stages at
	// once (max_concurrent_pipelines), whether on an ingress worker or inline
	// on the goroutine that produced them.
	ingressSlots chan struct{}
	wg           sync.WaitGroup
	// lifeMu orders Start and the beginning of a shutdown: a pump shut
	// down (even before it started) never starts. stopped is closed when
	// the first shutdown returns (made when it begins).
	lifeMu  sync.Mutex
	started atomic.Bool
	closing atomic.Bool
	stopped chan struct{}
	// stopNow marks an immediate shutdown (ShutdownNow): queued work is
	// dropped, not handled.
	stopNow atomic.Bool
	// keepHalt marks a graceful shutdown of a halted pump whose journal
	// re-delivers: the halted listeners' queued messages are dropped
	// undelivered (see drop) instead of handled.
	keepHalt atomic.Bool
	// drainCut marks a graceful shutdown whose drain timed out: the work
	// queue is closing, so a journaled handling that finishes from now on
	// is dropped undelivered (see cutByDrain) instead of processed.
	drainCut atomic.Bool
	// watchEvery is the watchdog's period (nanoseconds; see noteTimeout),
	// watchPoke re-arms it, watchStop stops it and watchDone says it did.
	watchEvery atomic.Int64
	watchPoke  chan struct{}
	watchStop  chan struct{}
	watchDone  chan struct{}
	// haltScope is what Halt stopped (nil: nothing); haltMu orders Halt,
	// Unhalt and Shutdown's lifting of a halt.
	haltScope atomic.Pointer[HaltScope]
	// haltedNames are the listeners HaltListener stopped: lower-case name
	// → name (nil: none); replaced whole, under haltMu.
	haltedNames atomic.Pointer[map[string]string]
	haltMu      sync.Mutex
	// abandoned counts handler calls abandoned after CancelGrace.
	abandoned atomic.Int64
	// chainsStopped counts forwards refused by MaxChainDepth and
	// conversations stopped for a handler's TooDeepError.
	chainsStopped atomic.Int64
	// dgate is the delivery gate (SetGate; nil: none) and held the
	// messages it holds (gate.go).
	dgate     atomic.Pointer[gateBox]
	held      heldSet
	startTime time.Time

	convs *convTable
	// killing counts killed or cancelled conversations still in flight
	// (fast path: 0).
	killing atomic.Int32
	// kills remembers the conversations killed (killed.go).
	kills recentKills
	// unjournaledTurns numbers the turns begun by a message that has no
	// journal seq (no journal): their Event.Turn is its negation.
	unjournaledTurns atomic.Int64
	// unjournaledHandlings numbers the handlings of messages that have no
	// journal seq (no journal): their Event.About is told with its negation.
	unjournaledHandlings atomic.Int64

	// flightMu guards the admission accounting: inflight counts every unit
	// of work in flight (messages in or waiting for the ingress stages,
	// deliveries queued or running, emitted outputs); excess the
	// deliveries above their listener's share (listenerShare), which
	// admission does not count; users the external messages in flight per
	// admission account. flight is signalled when nothing is in flight any
	// more (the drain). budgetWaiters queues the senders waiting for room
	// in the budget, roomWaitingAt the listeners with senders waiting for
	// room there (admission_waiters.go); waitTickets numbers the waiters in
	// arrival order. admitClosed is closed once the pump shuts down.
	flightMu      sync.Mutex
	flight        *sync.Cond
	inflight      int
	excess        int
	users         map[string]int
	listenerShare int
	userShare     int
	// admitWaiting counts the admission waiters now waiting (guarded by
	// flightMu) and admitWakeups every time one of them woke to re-check
	// for room: what a release costs the waiters (admission_waiters.go).
	admitWaiting  int
	admitWakeups  atomic.Int64
	budgetWaiters waiterQueue
	roomWaitingAt map[*listener]struct{}
	waitTickets   uint64
	admitClosed   chan struct{}

	// refused counts and logs the busy refusals (admission_refusals.go).
	refused refusals

	processed   atomic.Int64
	failed      atomic.Int64
	stopCollect chan struct{}
}

// convState tracks one conversation: where its external replies go and how
// many messages of it are still in flight.
type convState struct {
	// killed marks a conversation stopped by Kill: its queued and emitted
	// messages are dropped as dead letters until nothing is in flight.
	killed bool
	// cancelled marks a conversation whose answer in flight Cancel
	// stopped: like a killed one's, its queued and emitted messages are
	// dropped as dead letters until nothing is in flight, but the
	// conversation is not ended (a continuation begins a fresh state).
	cancelled bool
	outlet    Outlet
	inflight  int
	// ending are threads whose handler returned nil while other messages of
	// the conversation were in flight; they end when it completes. The
	// first waits in endingOne.
	ending    []string
	endingOne [1]string
	// spent reports that a forward marked a thread of the conversation
	// spent: those end when it completes (endSpent).
	spent bool
	// tbl is the routing snapshot the conversation started with and routes
	// within (pinned until the conversation completes).
	tbl *table
	// profile is the profile of the conversation's root thread, as its
	// outside party's messages were delivered on it ("" none, or not
	// profiled): its completion event carries it (Event.Profile).
	profile string
	// turn is the Event.Turn of the conversation's events: the journal seq
	// of the outside message that began this turn of it (0 until one was
	// delivered).
	turn int64
	// held are the outside messages that continue the conversation while
	// a turn of it is in flight, journaled and waiting, in the order they
	// came, for the turn before them to complete (see turns.go).
	held []*heldTurn
	// reserved is the held continuation this state was kept for: it
	// begins its turn on it (convBegin) instead of waiting again.
	reserved *heldTurn
}

// New builds a pump. Listeners are added with Register before Start.
func New(opts Options) (*Pump, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	in, err := stage.NewIngress(stage.IngressConfig{MaxBytes: opts.MaxBytes})
	if err != nil {
		return nil, err
	}
	core, err := stage.Core()
	if err != nil {
		return nil, err
	}
	if opts.Threads == nil {
		opts.Threads = registry.NewThreads(registry.ThreadsConfig{Organism: opts.Organism, Clock: opts.Clock})
	}
	if opts.Todos == nil {
		opts.Todos = registry.NewTodoRegistry(registry.TodoConfig{Lineage: opts.Threads})
	}
	if opts.Context == nil {
		cb, err := registry.NewContextBuffer(registry.ContextConfig{Clock: opts.Clock})
		if err != nil {
			return nil, err
		}
		opts.Context = cb
	}
	p := &Pump{
		opts:          opts,
		log:           opts.Logger,
		ingress:       in,
		core:          core,
		threads:       opts.Threads,
		todos:         opts.Todos,
		context:       opts.Context,
		journal:       opts.Journal,
		killBook:      killBookOf(opts),
		work:          newWorkQueue(),
		slots:         newHandlerSlots(opts.MaxConcurrentHandlers),
		ingressSlots:  make(chan struct{}, opts.MaxConcurrentPipelines),
		convs:         newConvTable(),
		users:         map[string]int{},
		listenerShare: ceilDiv(opts.MaxInFlight, 8),
		userShare:     ceilDiv(opts.MaxInFlight, 4),
		admitClosed:   make(chan struct{}),
	}
	p.flight = sync.NewCond(&p.flightMu)
	p.refused.every, p.refused.log = refusalLogEvery, opts.Logger
	p.watchPoke = make(chan struct{}, 1)
	p.watchEvery.Store(int64(maxWatchEvery))
	if opts.CancelGrace > 0 {
		p.watchEvery.Store(int64(watchEvery(opts.CancelGrace)))
	}
	p.routes.Store(newTable())
	p.routesChanged = make(chan struct{})
	if dj, ok := opts.Journal.(DurableJournal); ok {
		p.durable = dj
		p.gate = gate.New(dj.WaitDurable, p.deliverHeld, opts.Logger)
	}
	p.context.KeepEnded(p.keptConversation) // conversations continue (continuation.go)
	p.threads.OnEnd(func(ids []string) {
		p.todos.ThreadsEnded(ids)
		p.context.ThreadsEnded(ids)
	})
	return p, nil
}

// Register adds a listener. Registration rules: unique names, no shared root
// tags except broadcast groups of one payload type, agents never share a tag.
func (p *Pump) Register(l Listener) error {
	return p.register(l, false)
}

// RegisterSystem adds one of the organism's own listeners (system.boot,
// system.todo, …), whose names are otherwise reserved.
func (p *Pump) RegisterSystem(l Listener) error {
	return p.register(l, true)
}

func (p *Pump) register(l Listener, system bool) error {
	if p.started.Load() {
		return ErrStarted
	}
	rl := p.newListener(l)
	return p.editRoutes(func(t *table) (*table, error) { return t.with(rl, system) })
}

// newListener builds the pump's state of l (not registered yet).
func (p *Pump) newListener(l Listener) *listener {
	rl := &listener{Listener: l}
	rl.only = []*listener{rl}
	rl.Peers = append([]string(nil), l.Peers...)
	rl.peerset.Store(newPeerSet(l.Peers))
	if eh, ok := l.Handler.(xmlpipe.ErrorHandler); ok {
		rl.errHandler = eh
	}
	if rl.Workers <= 0 {
		if rl.Agent {
			rl.Workers = p.opts.MaxConcurrentPerAgent
		} else {
			rl.Workers = p.opts.MaxConcurrentHandlers
		}
	}
	if rl.QueueSize <= 0 {
		rl.QueueSize = p.opts.QueueSize
	}
	p.listenerTimeout(rl)
	rl.queue = newSchedQueue(p.opts.Scheduling)
	rl.queue.holdFrom = p.senderHalted
	return rl
}

// Start builds the agents' usage instructions and starts the ingress and
// listener workers. A pump starts once: again is ErrStarted, and after
// Shutdown or ShutdownNow (called before Start too) ErrClosed.
func (p *Pump) Start() error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.closing.Load() {
		return ErrClosed
	}
	if !p.started.CompareAndSwap(false, true) {
		return ErrStarted
	}
	p.startTime = p.opts.Clock()
	if err := p.restoreEras(); err != nil {
		p.started.Store(false)
		return err
	}
	for _, l := range p.routes.Load().all() {
		p.buildUsage(l)
	}
	for i := 0; i < p.opts.MaxConcurrentPipelines; i++ {
		p.wg.Add(1)
		go p.ingressWorker()
	}
	for _, l := range p.routes.Load().all() {
		p.startWorkers(l)
	}
	p.stopCollect = make(chan struct{})
	p.wg.Add(1)
	go p.collector(p.opts.CollectEvery, p.stopCollect)
	// The watchdog runs until the workers stopped: it frees the slots of
	// handlers stuck during a drain too.
	p.watchStop, p.watchDone = make(chan struct{}), make(chan struct{})
	go p.watchdog(p.watchStop, p.watchDone)
	return nil
}

// buildUsage gives an agent with peers its usage instructions, from the
// peers' current schemas.
func (p *Pump) buildUsage(l *listener) {
	ps := l.peerset.Load()
	if !l.Agent || len(ps.names) == 0 {
		return
	}
	l.peerset.Store(agentPeerSet(l, p.routes.Load(), ps.names))
}

// Shutdown stops admitting external messages, waits for in-flight work to
// drain (bounded by ctx and Options.ShutdownTimeout), then stops every worker.
// A call while another shutdown runs waits for that one to return (bounded
// by its own ctx) and returns nil; so does a call after it. A halted pump
// whose journal re-delivers keeps its halt: what waits at a halted listener
// is left undelivered instead of handled. A handler the pump abandoned
// (it ignored its ended context past Options.CancelGrace) is not waited
// for: its goroutine may outlive Shutdown, so handlers must watch ctx.
// When the drain times out, the handlers still running are cancelled
// (cause ErrDrainTimedOut), each with its CancelGrace, and a journaled
// message whose handling finishes afterwards (or that is still queued) is
// left undelivered for Recover to re-deliver on the next start, as after
// ShutdownNow: its outputs could no longer be processed, and it is never
// marked delivered without them.
func (p *Pump) Shutdown(ctx context.Context) error {
	return p.shutdown(ctx, false)
}

// ShutdownNow stops the pump without draining: it stops admitting external
// messages, cancels the context of every running handler (with cause
// ErrShutdown), and drops what is
// queued and what handlers emit from now on instead of handling it. Nothing
// dropped is marked delivered, so with a DeliveryJournal every journaled
// message among it is re-delivered by Recover on the next start (the
// at-least-once contract); a message not journaled yet (an external one
// still in the ingress stages) is refused to its sender with ErrClosed. It
// waits for the running handlers to return, bounded by ctx and
// Options.ShutdownTimeout, and reports those that did not. During a
// graceful Shutdown it makes that one stop at once and waits for it to
// return, bounded by ctx.
func (p *Pump) ShutdownNow(ctx context.Context) error {
	return p.shutdown(ctx, true)
}

// shutdown is Shutdown (drain first) or ShutdownNow (now).
func (p *Pump) shutdown(ctx context.Context, now bool) error {
	if now {
		p.stopNow.Store(true)
		// After the mark: a worker starting a call now either sees it
		// (handle) or published its call before this scan.
		p.cancelCalls(ErrShutdown, func(*handlerCall) bool { return true })
		p.flightMu.Lock()
		p.flight.Broadcast() // a graceful drain under way stops waiting
		p.flightMu.Unlock()
	}
	p.lifeMu.Lock()
	first := p.closing.CompareAndSwap(false, true)
	if first {
		p.stopped = make(chan struct{})
	}
	stopped := p.stopped
	p.lifeMu.Unlock()
	if !first { // another call stops the pump: wait for it
		select {
		case <-stopped:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("pump: shutdown under way: %w", ctx.Err())
		}
	}
	defer close(stopped)
	close(p.admitClosed) // Inject calls waiting for room fail with ErrClosed now
	p.haltMu.Lock()
	if _, redeliver := p.journal.(DeliveryJournal); redeliver && (p.haltScope.Load() != nil || p.haltedNames.Load() != nil) {
		// The halt holds through the stop: what waits at a halted
		// listener is dropped undelivered, for the next start (which
		// starts halted) to re-deliver, instead of running work the
		// operator stopped.
		p.keepHalt.Store(true)
	} else {
		p.haltScope.Store(nil) // a halted listener drains too (nothing would re-deliver it)
		p.haltedNames.Store(nil)
	}
	p.haltMu.Unlock()
	for _, l := range p.liveListeners() {
		l.queue.setPaused(false) // a paused listener drains too
		l.queue.setHalted(false) // (a halted one by dropping, when keepHalt)
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, p.opts.ShutdownTimeout)
	defer cancel()
	drained := make(chan struct{})
	go func() {
		p.flightMu.Lock()
		for p.inflight > 0 && ctx.Err() == nil && !p.stopNow.Load() {
			p.flight.Wait()
		}
		p.flightMu.Unlock()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		// Before the work queue closes: what finishes now could not have
		// its outputs processed.
		p.drainCut.Store(true)
		n := p.InFlight()
		// The handlers still running are cancelled, each with its grace:
		// the workers stop once they return or the watchdog gives up on
		// them, so Shutdown never waits on a handler with no timeout.
		cancelled := p.cancelCalls(ErrDrainTimedOut, func(*handlerCall) bool { return true })
		if n == 0 && cancelled == 0 {
			// Nothing was left to wait for (a ctx that had ended before
			// the call, on a drained pump): the drain succeeded.
			break
		}
		// Which bound ran out: a caller with time left must not read
		// its own deadline into "context deadline exceeded".
		bound := fmt.Sprintf(" after %s (Options.ShutdownTimeout)", p.opts.ShutdownTimeout)
		if caller.Err() != nil {
			bound = ": the caller's context ended"
		}
		err = fmt.Errorf("pump: shutdown: the drain ran out%s: %d messages still in flight, %d handlers cancelled: %w",
			bound, n, cancelled, ctx.Err())
		p.log.Warn("shutdown: drain timed out: the running handlers are cancelled; journaled messages whose "+
			"handling finishes now are left undelivered, for Recover to re-deliver on the next start",
			"inflight", n, "cancelled", cancelled, "error", ctx.Err())
		p.flight.Broadcast()
	}
	p.work.close()
	for _, l := range p.liveListeners() {
		l.queue.close()
	}
	if p.stopCollect != nil {
		close(p.stopCollect)
	}
	p.flight.Broadcast()
	if p.started.Load() {
		if p.stopNow.Load() {
			err = errors.Join(err, p.waitWorkers(ctx))
		} else {
			p.wg.Wait()
		}
		close(p.watchStop)
		<-p.watchDone
	}
	if p.gate != nil {
		p.gate.Close() // the drained messages' last events, once committed
	}
	var cause error
	if p.stopNow.Load() {
		cause = ErrShutdown
	}
	p.asks.stop(cause) // what did not complete never will here
	p.refused.stop()
	return err
}

// waitWorkers waits for every worker to stop, bounded by ctx (an immediate
// shutdown: a handler that ignores its cancelled context is left running).
func (p *Pump) waitWorkers(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		running := 0
		for _, l := range p.liveListeners() {
			running += int(l.active.Load())
		}
		return fmt.Errorf("pump: immediate shutdown: %d handlers still running: %w", running, ctx.Err())
	}
}

// ShutdownTimeout is how long Shutdown drains before it gives up waiting
// for in-flight work (Options.ShutdownTimeout, defaults applied).
func (p *Pump) ShutdownTimeout() time.Duration { return p.opts.ShutdownTimeout }

// InFlight returns the number of messages admitted and not yet fully processed.
func (p *Pump) InFlight() int {
	p.flightMu.Lock()
	defer p.flightMu.Unlock()
	return p.inflight
}

// Subscribe registers an observer of every event; the returned func removes it.
func (p *Pump) Subscribe(o Outlet) (cancel func()) { return p.subs.add(o) }

// SubscribeKinds registers an observer of the events of the given kinds
// only; the returned func removes it. An event that neither an outlet nor
// any subscriber takes skips the durability gate: with a DurableJournal it
// neither waits for nor hurries a commit (a gateway that only answers its
// conversations' replies does not force the commit of each message it
// injects before that message's handler replied).
func (p *Pump) SubscribeKinds(o Outlet, kinds ...EventKind) (cancel func()) {
	return p.subs.add(o, kinds...)
}

// Threads returns the thread registry (operator use: /threads, debug dumps).
func (p *Pump) Threads() *registry.Threads { return p.threads }

// Context returns the context buffer.
func (p *Pump) Context() *registry.ContextBuffer { return p.context }

// Todos returns the todo registry.
func (p *Pump) Todos() *registry.TodoRegistry { return p.todos }

// Organism returns the organism name.
func (p *Pump) Organism() string { return p.opts.Organism }

// Routes returns the routing table.
func (p *Pump) Routes() []Route { return p.routes.Load().routes() }

// Lookup returns the registered listener of that name (case-insensitive).
func (p *Pump) Lookup(name string) (Listener, bool) {
	l := p.routes.Load().lookup(name)
	if l == nil {
		return Listener{}, false
	}
	return l.Listener, true
}

// Stats summarises the pump.
type Stats struct {
	Uptime    time.Duration
	Processed int64
	Failed    int64
	InFlight  int
	// Threads counts the thread registry's nodes: the threads of the
	// conversations in flight and those of completed ones, kept (a client
	// may continue a conversation) until the thread TTL collects them.
	Threads int
	// Conversations counts the conversations in flight: begun and not
	// yet completed.
	Conversations int
	// Abandoned counts handler calls abandoned because they did not return
	// within CancelGrace of their context's end.
	Abandoned int64
	// ChainsStopped counts forwards refused because they would have made
	// their conversation's chain deeper than Options.MaxChainDepth, and
	// conversations stopped because a call of theirs was refused for a
	// peer organism's limit (TooDeepError).
	ChainsStopped int64
}

// Stats returns counters.
func (p *Pump) Stats() Stats {
	return Stats{
		Uptime:        p.opts.Clock().Sub(p.startTime),
		Processed:     p.processed.Load(),
		Failed:        p.failed.Load(),
		InFlight:      p.InFlight(),
		Threads:       p.threads.Len(),
		Conversations: p.convs.len(),
		Abandoned:     p.abandoned.Load(),
		ChainsStopped: p.chainsStopped.Load(),
	}
}

// payloadTypeOf returns the payload type of a handler's output value.
func (p *Pump) payloadTypeOf(v any) (*xmlpipe.PayloadType, error) {
	switch v.(type) {
	case *xmlpipe.Huh, xmlpipe.Huh:
		return p.core.Huh, nil
	case *xmlpipe.SystemError, xmlpipe.SystemError:
		return p.core.SystemError, nil
	}
	if v == nil {
		return nil, fmt.Errorf("%w: nil payload", failure.ErrEncode)
	}
	if f, ok := v.(xmlpipe.FixedPayload); ok {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil, fmt.Errorf("%w: nil %T payload", failure.ErrEncode, v)
		}
		return f.PayloadType()
	}
	return xmlpipe.NewPayloadType(reflect.TypeOf(v))
}
