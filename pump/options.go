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

// Options configures a Pump. Zero values take the documented defaults.
type Options struct {
	// Organism is the organism name (first segment of every thread path).
	Organism string
	// MaxBytes caps one message (default 1 MiB).
	MaxBytes int
	// MaxConcurrentPipelines is the number of ingress workers (default 50).
	MaxConcurrentPipelines int
	// MaxConcurrentHandlers caps handlers running at once across all listeners (default 20).
	MaxConcurrentHandlers int
	// MaxConcurrentPerAgent caps one agent's concurrent handlers (default 5).
	MaxConcurrentPerAgent int
	// Scheduling orders listener queues (default breadth-first).
	Scheduling Scheduling
	// QueueSize bounds each listener's queue (default 1024).
	QueueSize int
	// MaxInFlight bounds messages admitted from outside and not yet fully
	// processed; Inject blocks beyond it (backpressure to transports; default 4096).
	MaxInFlight int
	// MaxMessagesPerTurn caps the messages one Raw output (an LLM agent's
	// reply) may send, unless its listener sets its own (default 32).
	MaxMessagesPerTurn int
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
	return errors.Join(errs...)
}
