package pump

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// Scheduling orders each listener's queue.
type Scheduling string

// Scheduling policies.
const (
	// BreadthFirst serves threads round-robin (fair across conversations).
	BreadthFirst Scheduling = "breadth-first"
	// DepthFirst serves the deepest chain first (finish sub-tasks first).
	DepthFirst Scheduling = "depth-first"
)

// DefaultMaxMessagesPerTurn is how many messages one Raw output may send
// unless Options or the listener say otherwise.
const DefaultMaxMessagesPerTurn = 32

// Default handler deadlines (Options.HandlerTimeout, Options.AgentTimeout).
const (
	// DefaultHandlerTimeout bounds a call of a tool or any other listener
	// that is not an agent: long enough for a command, a fetch or a WASM call
	// under their own limits (30 s by default), short enough that a stuck
	// one frees its slot within a minute.
	DefaultHandlerTimeout = 60 * time.Second
	// DefaultAgentTimeout bounds one agent turn: a model call, which may wait
	// for rate limits and retry (the LLM layer bounds each request itself,
	// 120 s by default).
	DefaultAgentTimeout = 5 * time.Minute
)

// DefaultMaxQueueWait is how long a new external message may be expected to
// wait at its target listener before it is refused as busy, unless Options
// say otherwise (see Options.MaxQueueWait). It is the length of a long
// model call: an agent whose calls run for tens of seconds still queues a
// message or two behind them (TestAdmissionDefaultLetsAModelCallQueue;
// 10 s refused the second one), and what is admitted still starts well
// within a client's usual minute.
const DefaultMaxQueueWait = 30 * time.Second

// Options configures a Pump. Zero values take the documented defaults.
type Options struct {
	// Organism is the organism name (first segment of every thread path).
	Organism string
	// MaxBytes caps one message (default 1 MiB).
	MaxBytes int
	// MaxConcurrentPipelines is the number of ingress workers (default 50).
	MaxConcurrentPipelines int
	// MaxConcurrentHandlers caps handlers running at once across all
	// listeners (default 20): the global handler slots. They are shared
	// fairly: one listener's handlers hold at most ceil(N/2) of the N slots
	// at once (a hard cap, 1 when N is 1 or 2), so listeners whose handlers
	// block — a read that never returns, a peer that never answers — leave
	// at least half the slots to the others; a slot freed while several
	// listeners wait goes to the waiting listener holding the fewest slots
	// (ties: the longest waiting), so every waiting listener below its cap
	// gets the next free slot once the listeners waiting with fewer slots
	// are served: none starves while slots are freed. Slots held by handlers
	// that never return are freed by their listener's timeout (see
	// Listener.Timeout and CancelGrace). Remote listeners run outside the
	// slots.
	MaxConcurrentHandlers int
	// MaxConcurrentPerAgent caps one agent's concurrent handlers (default 5).
	MaxConcurrentPerAgent int
	// Scheduling orders listener queues (default breadth-first).
	Scheduling Scheduling
	// QueueSize bounds each listener's queue (default 1024).
	QueueSize int
	// MaxInFlight is the admission budget (default 4096): the in-flight
	// work Inject admits new messages against — envelopes in or waiting for
	// the ingress stages and deliveries queued or running at a listener,
	// counting at most MaxInFlight/8 (rounded up) deliveries per listener, so
	// the backlog of stalled listeners (paused, halted, blocked) cannot use
	// up the budget of the others. Inject waits for room at most AdmitWait
	// (or its context's deadline, when sooner) and then fails with a
	// *BusyError (ErrBusy). The budget is also shared per target and per
	// user: a new external message is refused with ErrBusy at once when its
	// target listener already holds MaxInFlight/8 deliveries (or its queue
	// is full), and an authenticated user (Principal.User, else
	// Principal.From) may have at most MaxInFlight/4 (rounded up) external
	// messages in flight — until their handling finished; callers without a
	// Principal (in-process: console, tests, OOB) are not capped per user.
	// Internal work (handler output) is never refused.
	MaxInFlight int
	// MaxChainDepth caps the hops of one chain of forwards (default
	// DefaultMaxChainDepth): a Send or Raw message that would take a
	// conversation's chain — the listeners it passed through, each forward
	// one more, each Respond one fewer — beyond it is refused, so listeners
	// that forward to each other in a cycle are stopped (see ErrChainTooDeep).
	MaxChainDepth int
	// MaxMessagesPerTurn caps the messages one Raw output (an LLM agent's
	// reply) may send, unless its listener sets its own (default 32).
	MaxMessagesPerTurn int
	// AdmitWait bounds how long Inject waits for room under MaxInFlight
	// before it fails with ErrBusy (default 2 s; negative: not at all).
	// Recover waits as long as its context allows.
	AdmitWait time.Duration
	// MaxQueueWait bounds how long a new external message is expected to
	// wait at its target listener before its handling starts (default
	// DefaultMaxQueueWait; negative: no bound, only MaxInFlight's shares).
	// The expected wait is the messages ahead of it there — queued, or
	// waiting for room — times the listener's pace, the mean time between
	// two of its handlings ending while messages wait, and at least the
	// time it has gone without ending one while messages wait. Beyond
	// MaxQueueWait, Inject fails at once with a *BusyError whose
	// RetryAfter is when the backlog should be short enough; a message
	// whose target holds its share waits for room only while room is
	// expected within a quarter of a second, else it too is refused at
	// once. Under overload the pump so admits what it can start soon
	// and answers busy fast for the rest, rather than letting everything
	// it admits wait ever longer. A paused or halted listener's backlog
	// waits on purpose and is bounded by its share alone; Recover and
	// internal work are never refused.
	MaxQueueWait time.Duration
	// HandlerTimeout is the default deadline of one handler call of a
	// listener that is not an agent (default 60 s; negative: none), and
	// AgentTimeout the default of an agent's (default 5 min: a model turn
	// with its retries). Listener.Timeout overrides them per listener; a
	// Remote listener has none by default (it bounds its own calls).
	HandlerTimeout time.Duration
	AgentTimeout   time.Duration
	// CancelGrace is how long a handler whose context ended (its timeout,
	// Kill, Halt) may keep running before the pump abandons it (default 5 s;
	// negative: never): its slot is freed, its result ignored, and a new
	// worker takes the place of the one stuck in it, at most Listener.Workers
	// of them per listener at once. An immediate shutdown never abandons
	// (ShutdownNow reports the handlers still running instead).
	CancelGrace time.Duration
	// ShutdownTimeout bounds the drain on Shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// CollectEvery is how often idle threads and context history are
	// collected (their TTLs live in the registries; default 1 min).
	CollectEvery time.Duration
	// Threads, Todos and Context are the kernel registries (created when nil).
	Threads *registry.Threads
	Todos   *registry.TodoRegistry
	Context *registry.ContextBuffer
	// Journal records every accepted and emitted envelope (optional).
	Journal Journal
	// Storage, when set, is asked before every new external message
	// whether the storage the Journal writes to can commit now: while it
	// fails (a full disk) such messages are refused before anything of
	// them is read, with a *StorageRefusal (ErrCannotJournal). Internal
	// messages — the outputs of handlers already running — go on.
	Storage Storage
	// Kills records kills for good when the Journal does not (a durable
	// organism whose journal is disabled keeps them in its store); nil:
	// the Journal's KillJournal capability, if any, else memory only.
	Kills KillJournal
	// ProfileEras, when set, keeps the history of the profile definitions
	// across restarts: a conversation restored after a restart never
	// routes wider than the definitions it began with (nil: the history
	// lives in memory, and a restart resolves restored conversations'
	// profiles as the definitions then installed say).
	ProfileEras ProfileEraJournal
	// Observer, when set, sees how long each stage of each message took
	// (metrics, traces); nil costs nothing. When it is also a
	// HandlerContexter, it gives each handler call its context.
	Observer StageObserver
	// ObserveEvery, above 1, times each stage of a message with
	// probability 1/ObserveEvery instead of always: the clock is read and
	// the Observer called that much less often (default 1, every stage).
	ObserveEvery int
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Clock returns the current time (default time.Now).
	Clock func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Organism == "" {
		o.Organism = "organism"
	}
	if o.MaxConcurrentPipelines <= 0 {
		o.MaxConcurrentPipelines = 50
	}
	if o.MaxConcurrentHandlers <= 0 {
		o.MaxConcurrentHandlers = 20
	}
	if o.MaxConcurrentPerAgent <= 0 {
		o.MaxConcurrentPerAgent = 5
	}
	if o.Scheduling == "" {
		o.Scheduling = BreadthFirst
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 4096
	}
	if o.MaxMessagesPerTurn <= 0 {
		o.MaxMessagesPerTurn = DefaultMaxMessagesPerTurn
	}
	if o.MaxChainDepth <= 0 {
		o.MaxChainDepth = DefaultMaxChainDepth
	}
	if o.AdmitWait == 0 {
		o.AdmitWait = 2 * time.Second
	}
	if o.MaxQueueWait == 0 {
		o.MaxQueueWait = DefaultMaxQueueWait
	}
	if o.HandlerTimeout == 0 {
		o.HandlerTimeout = DefaultHandlerTimeout
	}
	if o.AgentTimeout == 0 {
		o.AgentTimeout = DefaultAgentTimeout
	}
	if o.CancelGrace == 0 {
		o.CancelGrace = 5 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.CollectEvery <= 0 {
		o.CollectEvery = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.Scheduling != "" && o.Scheduling != BreadthFirst && o.Scheduling != DepthFirst {
		errs = append(errs, fmt.Errorf("pump: scheduling %q: want breadth-first or depth-first", o.Scheduling))
	}
	if o.ObserveEvery < 0 {
		errs = append(errs, errors.New("pump: observe every must not be negative"))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, errors.New("pump: max bytes must not be negative"))
	}
	if o.MaxMessagesPerTurn < 0 {
		errs = append(errs, errors.New("pump: max messages per turn must not be negative"))
	}
	if o.MaxChainDepth < 0 {
		errs = append(errs, errors.New("pump: max chain depth must not be negative"))
	}
	return errors.Join(errs...)
}
