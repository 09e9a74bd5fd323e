package busload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/xml-pipeline/xmlpipe/pump/bus"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// benchUser is the user the bench creates and logs in as.
const benchUser = "bench"

// serverShutdownTimeout bounds closing the bus at the end of a run.
const serverShutdownTimeout = 15 * time.Second

// Config configures Run.
type Config struct {
	// Load is the client side; its Target is filled in by Run.
	Load LoadConfig
	// Build assembles the organism under test (not started) with the options
	// given (a durable organism on a temporary data directory); required.
	Build func(organism.Options) (*organism.Organism, error)
	// InMemory runs the organism without a data directory (no journal, no
	// persisted registries; the users and sessions live in a store of their
	// own): the bus and the pump without the store's cost.
	InMemory bool
	// Logger receives the organism's and the server's logs (default:
	// discard).
	Logger *slog.Logger
	// LoadPhase, when set, is called once every client is connected, as the
	// load phase begins (where the per-reply counts start); the function it
	// returns, when not nil, is called as the load phase ends (where they
	// stop). `xmlpipe bench --bus --cpuprofile` profiles the replies alone
	// with it, not the login's password hashing nor the TLS handshakes.
	LoadPhase func() (end func())
}

// Result is what Run measured.
type Result struct {
	Clients int `json:"clients"`
	// Rate is the configured total send rate (0: closed loop).
	Rate    float64 `json:"rate"`
	Seconds float64 `json:"seconds"`
	Cores   int     `json:"cores"`
	// Durable is whether the organism journaled and persisted its
	// registries (Config.InMemory unset).
	Durable bool  `json:"durable"`
	Sent    int64 `json:"sent"`
	Acked   int64 `json:"acks"`
	Replies int64 `json:"replies"`
	// RepliesPerSec counts the replies that arrived within the sending
	// window, over its length.
	RepliesPerSec float64 `json:"replies_per_sec"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	MaxMs         float64 `json:"max_ms"`
	Lost          int64   `json:"lost"`
	Refused       int64   `json:"refused"`
	WrongReply    int64   `json:"wrong_replies"`
	Errors        int64   `json:"errors"`
	// CPUPerReplyUs is the process's CPU time (user + system, server and
	// clients together) over the run's load phase per reply: on a shared
	// machine a steadier figure than replies/s. The load phase runs from
	// the moment every client is connected (TLS handshake, upgrade and
	// subscription done: not a reply's cost) until the clients are done.
	CPUPerReplyUs float64 `json:"cpu_per_reply_us"`
	// FramesPerReply and WritesPerReply are the frames the server's sockets
	// sent during the load phase, and the network writes they took, per
	// reply (Run only).
	FramesPerReply float64 `json:"frames_per_reply,omitempty"`
	WritesPerReply float64 `json:"writes_per_reply,omitempty"`
	// StatementsPerReply and CommitsPerReply are the SQL statements the
	// durable organism's store writer ran and the transactions it
	// committed during the load phase, per reply (Run only, durable only):
	// what the journal and the registries cost, which the load of the
	// machine moves less than it moves the CPU figures.
	StatementsPerReply float64 `json:"store_statements_per_reply,omitempty"`
	CommitsPerReply    float64 `json:"store_commits_per_reply,omitempty"`
	// WALFramesPerReply is the pages the store writer's commits wrote to
	// the WAL during the load phase, per reply (Run only, durable only):
	// the bytes a reply costs the database, in pages of 16 KiB.
	WALFramesPerReply float64 `json:"store_wal_frames_per_reply,omitempty"`
	// AllocsPerReply and AllocBytesPerReply are the heap allocations of the
	// whole process (server and clients) during the load phase, per reply,
	// and GCCycles the collections it ran (Run only): the garbage a reply
	// makes, a count the load of the machine does not move.
	AllocsPerReply     float64 `json:"allocs_per_reply,omitempty"`
	AllocBytesPerReply float64 `json:"alloc_bytes_per_reply,omitempty"`
	GCCycles           int64   `json:"gc_cycles,omitempty"`
	// FirstErrors are up to 5 error texts.
	FirstErrors []string `json:"first_errors,omitempty"`
}

// ResultOf summarises a tally.
func ResultOf(cfg LoadConfig, t Tally) Result {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	r := Result{Clients: cfg.Clients, Rate: cfg.Rate, Seconds: t.Elapsed.Seconds(), Cores: runtime.GOMAXPROCS(0),
		Sent: t.Sent, Acked: t.Acked, Replies: t.Replies, Lost: t.Lost, Refused: t.Refused, WrongReply: t.WrongReply,
		Errors: t.Errors, P50ms: ms(t.Percentile(0.5)), P99ms: ms(t.Percentile(0.99)), MaxMs: ms(t.Percentile(1)),
		FirstErrors: t.FirstErrors}
	if t.Elapsed > 0 {
		r.RepliesPerSec = float64(t.InWindow) / t.Elapsed.Seconds()
	}
	return r
}

// String renders the result for a terminal.
func (r Result) String() string {
	var b strings.Builder
	mode := "closed loop"
	if r.Rate > 0 {
		mode = fmt.Sprintf("open loop at %.0f sends/s", r.Rate)
	}
	org := "durable organism"
	if !r.Durable {
		org = "in-memory organism"
	}
	fmt.Fprintf(&b, "replies/s          %10.0f  (%d clients, %s, %.2f s, %d cores, %s)\n", r.RepliesPerSec, r.Clients,
		mode, r.Seconds, r.Cores, org)
	fmt.Fprintf(&b, "latency p50 / p99  %7.1f ms / %.1f ms  max %.1f ms  (send → output frame)\n", r.P50ms, r.P99ms, r.MaxMs)
	fmt.Fprintf(&b, "sent / acks        %10d / %d  replies %d\n", r.Sent, r.Acked, r.Replies)
	fmt.Fprintf(&b, "cpu/reply          %8.1f µs  (server and clients, user + system)\n", r.CPUPerReplyUs)
	if r.FramesPerReply > 0 {
		fmt.Fprintf(&b, "frames / writes    %8.2f / %.2f per reply  (server → clients; a write is a TLS record and a syscall)\n",
			r.FramesPerReply, r.WritesPerReply)
	}
	if r.AllocsPerReply > 0 {
		fmt.Fprintf(&b, "allocs/reply       %8.0f  (%.0f bytes; %d GC cycles; server and clients)\n", r.AllocsPerReply,
			r.AllocBytesPerReply, r.GCCycles)
	}
	if r.StatementsPerReply > 0 {
		fmt.Fprintf(&b, "store              %8.2f statements / %.2f commits / %.2f WAL pages per reply  (the journal and the registries)\n",
			r.StatementsPerReply, r.CommitsPerReply, r.WALFramesPerReply)
	}
	fmt.Fprintf(&b, "lost               %10d  (sent, never answered by the end of the grace period)\n", r.Lost)
	fmt.Fprintf(&b, "refused / errors   %10d / %d  wrong replies %d\n", r.Refused, r.Errors, r.WrongReply)
	for _, e := range r.FirstErrors {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return b.String()
}

// Run starts the organism cfg.Build assembles on a temporary data
// directory (none with InMemory) with the main bus on a loopback TLS port (a self-signed
// certificate), creates a user with a password and TOTP, logs in once over
// HTTPS, drives the load through real TLS WebSockets and shuts everything
// down.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Build == nil {
		return Result{}, fmt.Errorf("%w: no organism", ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	load := cfg.Load
	if err := load.Validate(); err != nil {
		return Result{}, err
	}
	load = load.WithDefaults()

	dir, err := os.MkdirTemp("", "xmlpipe-busbench-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	opts := organism.Options{Logger: cfg.Logger, DataDir: filepath.Join(dir, "data")}
	if cfg.InMemory {
		opts.DataDir = ""
	}
	local, err := organism.Assemble(opts, cfg.Build)
	if err != nil {
		return Result{}, err
	}
	o := local.Organism()
	if err := o.Start(); err != nil {
		return Result{}, errors.Join(err, o.Shutdown(context.Background()))
	}
	defer o.Shutdown(context.Background())

	users := o.Store()
	if users == nil {
		if users, err = store.Open(filepath.Join(dir, "users"), store.Options{}); err != nil {
			return Result{}, err
		}
		defer users.Close()
	}
	svc, err := auth.New(users, auth.Options{Organism: o.Config.Organism.Name, Logger: cfg.Logger})
	if err != nil {
		return Result{}, err
	}
	password := "bench-" + o.Pump.Organism() + "-password"
	url, err := svc.AddUser(ctx, benchUser, password, auth.Operator)
	if err != nil {
		return Result{}, err
	}
	key, err := otp.NewKeyFromURL(url)
	if err != nil {
		return Result{}, err
	}
	cert, err := certs.SelfSigned(dir, []string{"127.0.0.1"}, time.Now)
	if err != nil {
		return Result{}, err
	}
	fp, err := certs.ParseFingerprint(certs.Fingerprint(cert))
	if err != nil {
		return Result{}, err
	}
	clientTLS := certs.PinnedClientConfig(fp)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	srv, err := bus.New(bus.Options{Addr: ln.Addr().String(), TLS: certs.ServerConfig(cert), Auth: svc, Organism: o,
		Console: local, Logger: cfg.Logger})
	if err != nil {
		ln.Close()
		return Result{}, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), serverShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			cfg.Logger.Error("bus shutdown", "error", err)
		}
		<-served
	}()

	code, err := totp.GenerateCode(key.Secret(), time.Now())
	if err != nil {
		return Result{}, err
	}
	base := "https://" + ln.Addr().String()
	token, err := Login(ctx, base, clientTLS, Credentials{Username: benchUser, Password: password, TOTP: code})
	if err != nil {
		return Result{}, err
	}
	load.Target = Target{URL: "wss://" + ln.Addr().String() + "/ws", TLS: clientTLS, Token: token}
	// The counts start once every client is connected: a connection's
	// setup is not a reply's cost.
	var stmts0, commits0, frames0 int64
	var cpu0 time.Duration
	var socks0 bus.SocketStats
	var heap0 heapCounts
	var endPhase func()
	load.Connected = func() {
		if cfg.LoadPhase != nil {
			endPhase = cfg.LoadPhase()
		}
		if st := o.Store(); st != nil {
			stats := st.Stats()
			stmts0, commits0, frames0 = st.Statements(), stats.Commits, stats.WALFrames
		}
		cpu0, socks0, heap0 = cpuTime(), srv.SocketStats(), readHeap()
	}
	t, err := Drive(ctx, load)
	cpu, socks, heap := cpuTime()-cpu0, srv.SocketStats(), readHeap()
	if endPhase != nil {
		endPhase()
	}
	if err != nil {
		return Result{}, err
	}
	r := ResultOf(load, t)
	r.Durable = !cfg.InMemory
	if t.Replies > 0 {
		r.CPUPerReplyUs = float64(cpu.Microseconds()) / float64(t.Replies)
		r.FramesPerReply = float64(socks.Frames-socks0.Frames) / float64(t.Replies)
		r.WritesPerReply = float64(socks.Writes-socks0.Writes) / float64(t.Replies)
		r.AllocsPerReply = float64(heap.allocs-heap0.allocs) / float64(t.Replies)
		r.AllocBytesPerReply = float64(heap.bytes-heap0.bytes) / float64(t.Replies)
		r.GCCycles = int64(heap.cycles - heap0.cycles)
		if st := o.Store(); st != nil {
			stats := st.Stats()
			r.StatementsPerReply = float64(st.Statements()-stmts0) / float64(t.Replies)
			r.CommitsPerReply = float64(stats.Commits-commits0) / float64(t.Replies)
			r.WALFramesPerReply = float64(stats.WALFrames-frames0) / float64(t.Replies)
		}
	}
	return r, nil
}

// heapCounts are the process's cumulative heap allocations and GC cycles.
type heapCounts struct{ allocs, bytes, cycles uint64 }

// heapMetrics are the runtime/metrics samples readHeap reads (no
// stop-the-world, unlike runtime.ReadMemStats).
var heapMetrics = []string{"/gc/heap/allocs:objects", "/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles"}

// readHeap reads the heap counters so far.
func readHeap() heapCounts {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return heapCounts{allocs: v(0), bytes: v(1), cycles: v(2)}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
