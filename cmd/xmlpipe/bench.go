package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bench"
	"github.com/xml-pipeline/xmlpipe/pump/bench/busload"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// benchStore reports what the store did during a bench run.
type benchStore struct {
	Rows                   int64   `json:"journal_rows"`
	Commits                int64   `json:"commits"`
	Statements             int64   `json:"statements"`
	StatementsPerEnvelope  float64 `json:"statements_per_envelope"`
	EnvelopesPerCommitMean float64 `json:"envelopes_per_commit"`
	QueuePeak              int64   `json:"queue_peak"`
	QueueCapacity          int     `json:"queue_capacity"`
	Blocked                int64   `json:"blocked_writes"`
}

// runBench is `xmlpipe bench [--duration D] [--journal|--durable] [--json]`:
// the end-to-end pump benchmark (a tool-only two-hop flow, every envelope
// through the full chain), optionally journaling to a SQLite store in a
// temporary directory (--journal) and persisting the kernel registries there
// too, as a durable organism does (--durable). --metrics measures what the
// Prometheus metrics cost: throughput slices alternate between two
// identical in-memory pumps, one with metrics and one without.
//
// With --bus it is the main bus's load generator instead: see runBusBench.
func runBench(ctx context.Context, args []string, std streams) int {
	fs := newFlags("bench", "[--duration 5s] [--injectors N] [--journal] [--durable] [--metrics] [--agents] [--json] [--cpuprofile FILE] [--mutexprofile FILE]\n"+
		"       xmlpipe bench --bus [--clients 200] [--duration 10s] [--rate R] [--grace 5s] [--in-memory] [--all-events] [--client-threads] [--versus-pump] [--json] [--cpuprofile FILE] [--mutexprofile FILE]\n"+
		"       xmlpipe bench --federation [--callers 32] [--duration 5s] [--samples 500] [--grace 5s] [--statements] [--json] [--cpuprofile FILE] [--mutexprofile FILE]", std.err)
	duration := fs.Duration("duration", 0, "length of the throughput phase (default 5s; 10s with --bus)")
	onBus := fs.Bool("bus", false, "load-test the main bus: TLS WebSocket clients on loopback sending @greeter conversations")
	onLink := fs.Bool("federation", false, "load-test a federation link: two durable organisms in this process over TLS on loopback")
	callers := fs.Int("callers", 32, "with --federation: concurrent callers through the link")
	samples := fs.Int("samples", 500, "with --federation: sequential calls timed across the link, and as many locally")
	statements := fs.Bool("statements", false, "with --federation: list the store statements each organism ran per call, and the rows they changed")
	clients := fs.Int("clients", busload.DefaultClients, "with --bus: concurrent /ws clients")
	rate := fs.Float64("rate", 0, "with --bus: total sends per second, open loop (0: closed loop, each client waits for its reply)")
	grace := fs.Duration("grace", busload.DefaultGrace, "with --bus or --federation: how long to wait for outstanding replies after --duration")
	inMemory := fs.Bool("in-memory", false, "with --bus: no data directory (no journal, no persisted registries), to see the bus without the store")
	allEvents := fs.Bool("all-events", false, "with --bus: clients get every event of their conversations instead of subscribing to output frames only")
	clientThreads := fs.Bool("client-threads", false, "with --bus: clients begin each conversation on a fresh thread id of their own, as the Python reference's clients do")
	versusPump := fs.Bool("versus-pump", false, "with --bus: run the pump bench (in memory, as long as --duration, at most 5s) first and report the bus's replies/s over its conversations/s (envelopes/s ÷ 3)")
	injectors := fs.Int("injectors", 4, "goroutines injecting envelopes")
	asJSON := fs.Bool("json", false, "print one JSON object")
	withJournal := fs.Bool("journal", false, "journal to a SQLite store in a temporary directory, in throughput slices alternating with slices without, and report both")
	durable := fs.Bool("durable", false, "like --journal, and persist threads, todo watchers and context slots too")
	withMetrics := fs.Bool("metrics", false, "alternate throughput slices between a pump with the Prometheus metrics (scraped every 100 ms) and one without, and report both")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (with --bus: of the load phase, once every client is connected)")
	mutexProfile := fs.String("mutexprofile", "", "write a profile of lock contention over the whole run to this file")
	agents := fs.Bool("agents", false, "measure LLM agent turns against a loopback model server instead")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 0, 0) {
		return exitUsage
	}
	if *agents {
		if *duration == 0 {
			*duration = 5 * time.Second
		}
		return profiled(*cpuProfile, *mutexProfile, std, func() int {
			r, err := runAgentBench(ctx, *duration, *injectors)
			if err != nil {
				fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
				return exitFailure
			}
			printAgentBench(std.out, r, *asJSON)
			return exitOK
		})
	}
	if *versusPump && !*onBus {
		fmt.Fprintln(std.err, "xmlpipe bench: --versus-pump compares the bus with the pump; add --bus")
		return exitUsage
	}
	if *onLink {
		if *onBus || *agents || *withJournal || *durable || *withMetrics || *inMemory {
			fmt.Fprintln(std.err, "xmlpipe bench: --federation runs two durable organisms; drop --bus/--agents/--journal/--durable/--metrics/--in-memory")
			return exitUsage
		}
		if *duration == 0 {
			*duration = 5 * time.Second
		}
		if *callers < 1 || *samples < 1 || *grace <= 0 || *duration < 0 {
			fmt.Fprintln(std.err, "xmlpipe bench: --callers and --samples must be at least 1, --grace and --duration positive")
			return exitUsage
		}
		cfg := fedBenchConfig{Callers: *callers, Duration: *duration, Grace: *grace, Samples: *samples, Floor: 2000,
			Statements: *statements}
		return profiled(*cpuProfile, *mutexProfile, std, func() int {
			r, err := runFedBench(ctx, cfg)
			if err != nil {
				fmt.Fprintf(std.err, "xmlpipe bench --federation: %v\n", err)
				return exitFailure
			}
			printFedBench(std.out, r, *asJSON)
			return exitOK
		})
	}
	if *withMetrics && (*onBus || *withJournal || *durable) {
		fmt.Fprintln(std.err, "xmlpipe bench: --metrics compares two in-memory pumps; drop --bus/--journal/--durable")
		return exitUsage
	}
	if *onBus {
		if *withJournal || *durable {
			fmt.Fprintln(std.err, "xmlpipe bench: --bus journals always (a durable organism); drop --journal/--durable")
			return exitUsage
		}
		load := busload.LoadConfig{Clients: *clients, Duration: *duration, Rate: *rate, Grace: *grace, AllEvents: *allEvents, ClientThreads: *clientThreads}
		if err := load.Validate(); err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitUsage
		}
		cfg := busload.Config{Load: load, InMemory: *inMemory}
		var versus *bench.Config
		if *versusPump {
			// As long as the bus's load (at most the pump bench's default).
			versus = &bench.Config{Duration: min(cmp.Or(*duration, 5*time.Second), 5*time.Second), Injectors: *injectors}
		}
		if *cpuProfile != "" {
			// The load phase only: the login and the connections' setup are
			// no reply's cost (nor is the pump bench of --versus-pump).
			pf, err := os.Create(*cpuProfile)
			if err != nil {
				fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
				return exitFailure
			}
			defer pf.Close()
			cfg.LoadPhase = func() func() {
				if err := pprof.StartCPUProfile(pf); err != nil {
					fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
					return nil
				}
				return pprof.StopCPUProfile
			}
		}
		return profiled("", *mutexProfile, std, func() int { return runBusBench(ctx, cfg, versus, *asJSON, std) })
	}
	if *duration == 0 {
		*duration = 5 * time.Second
	}
	cfg := bench.Config{Duration: *duration, Injectors: *injectors, MetricsAB: *withMetrics}
	var st *store.Store
	if *withJournal || *durable {
		dir, err := os.MkdirTemp("", "xmlpipe-bench-")
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer os.RemoveAll(dir)
		st, err = store.Open(dir, store.Options{})
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer st.Close()
		cfg.Journal = organism.StoreJournal(st, nil)
		cfg.JournalAB, cfg.Flush = !*durable, st.Flush
		if *durable {
			if err := durableRegistries(&cfg, st); err != nil {
				fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
				return exitFailure
			}
		}
	}
	return profiled(*cpuProfile, *mutexProfile, std, func() int { return runPumpBench(ctx, cfg, st, *asJSON, std) })
}

// runPumpBench runs the pump bench with cfg and prints its result (with
// the store's figures when st is set).
func runPumpBench(ctx context.Context, cfg bench.Config, st *store.Store, asJSON bool, std streams) int {
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
		return exitFailure
	}
	var sr *benchStore
	if st != nil {
		if sr, err = storeReport(ctx, st); err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
	}
	if asJSON {
		b, _ := json.Marshal(struct {
			bench.Result
			Store *benchStore `json:"store,omitempty"`
		}{r, sr})
		fmt.Fprintln(std.out, string(b))
		return exitOK
	}
	fmt.Fprint(std.out, r.String())
	if sr != nil {
		fmt.Fprintf(std.out, "store              %10.2f  statements/envelope (%d statements, %d rows, %.0f rows/commit)\n",
			sr.StatementsPerEnvelope, sr.Statements, sr.Rows, sr.EnvelopesPerCommitMean)
		fmt.Fprintf(std.out, "store queue        %10d  peak of %d; %d writes waited for room\n", sr.QueuePeak, sr.QueueCapacity, sr.Blocked)
	}
	return exitOK
}

// runBusBench is `xmlpipe bench --bus`: the embedded hello-world organism
// on a temporary data directory (none with --in-memory) with its main bus
// on a loopback TLS port, driven by cfg.Load's clients over real TLS
// WebSockets after a real login. With versus set (--versus-pump) the pump
// bench runs first, in the same process, and the bus's replies/s are
// reported over its conversations/s.
func runBusBench(ctx context.Context, cfg busload.Config, versus *bench.Config, asJSON bool, std streams) int {
	var vs *busVersusPump
	if versus != nil {
		p, err := bench.Run(ctx, *versus)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench --bus --versus-pump: the pump bench: %v\n", err)
			return exitFailure
		}
		vs = &busVersusPump{PumpEnvelopesPerSec: p.EnvelopesPerSec, PumpConversationsPerSec: p.EnvelopesPerSec / hopsPerConversation}
	}
	cfg.Build = configSource{path: embeddedName, embedded: true}.build
	r, err := busload.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe bench --bus: %v\n", err)
		return exitFailure
	}
	if vs != nil && vs.PumpConversationsPerSec > 0 {
		vs.Ratio = r.RepliesPerSec / vs.PumpConversationsPerSec
	}
	if asJSON {
		b, _ := json.Marshal(struct {
			busload.Result
			Versus *busVersusPump `json:"versus_pump,omitempty"`
		}{r, vs})
		fmt.Fprintln(std.out, string(b))
		return exitOK
	}
	fmt.Fprint(std.out, r.String())
	if vs != nil {
		fmt.Fprintf(std.out, "versus the pump    %10.2f  bus replies/s over the pump's conversations/s (%.0f envelopes/s ÷ %d, `xmlpipe bench` just before)\n",
			vs.Ratio, vs.PumpEnvelopesPerSec, hopsPerConversation)
	}
	return exitOK
}

// hopsPerConversation is the envelopes of one @greeter conversation on
// the bus (the client's Greeting to the greeter, its GreetingResponse to
// the shouter, the ShoutedResponse to the response handler): the pump
// bench's envelopes/s over it are the conversations/s the pump alone
// would carry.
const hopsPerConversation = 3

// busVersusPump is `xmlpipe bench --bus --versus-pump`'s comparison: the
// pump bench's throughput just before the bus's load, in the same process,
// and the bus's replies/s over its conversations/s.
type busVersusPump struct {
	PumpEnvelopesPerSec     float64 `json:"pump_envelopes_per_sec"`
	PumpConversationsPerSec float64 `json:"pump_conversations_per_sec"`
	Ratio                   float64 `json:"ratio"`
}

// profiled runs fn with a CPU profile written to cpuProfile and a lock
// contention profile to mutexProfile (each when not empty) and returns its
// exit code.
func profiled(cpuProfile, mutexProfile string, std streams, fn func() int) int {
	if cpuProfile != "" {
		pf, err := os.Create(cpuProfile)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer pprof.StopCPUProfile()
	}
	if mutexProfile != "" {
		stop, err := profileMutexes(mutexProfile)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			}
		}()
	}
	return fn()
}

// profileMutexes records every contended lock from now on; the returned
// function writes the profile to path and stops recording.
func profileMutexes(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	runtime.SetMutexProfileFraction(1)
	return func() error {
		defer runtime.SetMutexProfileFraction(0)
		return errors.Join(pprof.Lookup("mutex").WriteTo(f, 0), f.Close())
	}, nil
}

// durableRegistries gives cfg kernel registries that persist to st, built
// and restored as a durable organism's are (organism.DurableRegistries).
func durableRegistries(cfg *bench.Config, st *store.Store) error {
	var err error
	cfg.Threads, cfg.Todos, cfg.Context, err = organism.DurableRegistries(st, nil,
		registry.ThreadsConfig{Organism: "bench"}, registry.ContextConfig{})
	return err
}

// storeReport flushes st and summarises its writes over the whole run
// (warm-up and latency phases included).
func storeReport(ctx context.Context, st *store.Store) (*benchStore, error) {
	if err := st.Flush(ctx); err != nil {
		return nil, err
	}
	rows, err := st.LastSeq()
	if err != nil {
		return nil, err
	}
	s := st.Stats()
	b := st.Backlog()
	r := &benchStore{Rows: rows, Commits: s.Commits, Statements: st.Statements(), QueuePeak: b.Peak,
		QueueCapacity: b.Capacity, Blocked: b.Blocked}
	if rows > 0 {
		r.StatementsPerEnvelope = float64(r.Statements) / float64(rows)
	}
	if s.Commits > 0 {
		r.EnvelopesPerCommitMean = float64(rows) / float64(s.Commits)
	}
	return r, nil
}
