// Package bench measures the pump end to end: a tool-only two-hop flow (an
// external envelope to a shouter, whose output goes to a counting sink), every
// envelope through the full chain. It reports envelopes/s, ingress→handler
// latency percentiles at half load, allocations per envelope and the ratio of
// the pump's CPU cost per envelope to the libxml2 parse+validate floor measured
// in the same run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Config configures a run.
type Config struct {
	// Duration of the throughput phase (default 5 s); the latency phase runs
	// for half of it at half the measured rate.
	Duration time.Duration
	// Injectors is the number of goroutines injecting (default 4).
	Injectors int
	// Journal, when set, records every envelope (to measure its cost).
	Journal pump.Journal
	// JournalAB, with Journal, runs the throughput phase in slices with the
	// journal alternately on and off (ABBA order) and reports both
	// throughputs: on a noisy machine that is the only fair comparison,
	// because the machine's speed drifts between separate runs by more than
	// the journal costs. Flush, when set, is called before each off slice to
	// wait until the journal committed what the on slice queued.
	JournalAB bool
	Flush     func(context.Context) error
	// MetricsAB runs the throughput phase in slices with the organism's
	// Prometheus metrics alternately on (observe.Metrics watching the pump
	// and observing its stages, sampled as `xmlpipe run` does, and scraped
	// every ScrapeEvery) and off, and reports both throughputs (ABBA order,
	// as JournalAB). ScrapeEvery defaults to 100 ms: far more often than
	// any Prometheus server scrapes, so the figure is an upper bound of
	// the cost.
	MetricsAB   bool
	ScrapeEvery time.Duration
	// Threads, Todos and Context, when set, are the pump's kernel registries
	// (a durable organism's persist every change to its store).
	Threads *registry.Threads
	Todos   *registry.TodoRegistry
	Context *registry.ContextBuffer
	// Logger for the pump (default: discard).
	Logger *slog.Logger
}

// Result is what a run measured.
type Result struct {
	Envelopes       int64   `json:"envelopes"`
	Seconds         float64 `json:"seconds"`
	EnvelopesPerSec float64 `json:"envelopes_per_sec"`
	P50us           float64 `json:"p50_us"`
	P99us           float64 `json:"p99_us"`
	LatencyRate     float64 `json:"latency_phase_envelopes_per_sec"`
	// PreemptionsPerSec is how often per second the OS took a CPU away from
	// one of the process's threads during the latency phase (involuntary
	// context switches). On a 2-core machine each one can leave a thread that
	// is mid-message off the CPU for a scheduler tick (4 ms): it tells a
	// latency tail the machine caused from one the pump caused.
	PreemptionsPerSec float64 `json:"preemptions_per_sec"`
	AllocsPerEnvelope float64 `json:"allocs_per_envelope"`
	BytesPerEnvelope  float64 `json:"bytes_per_envelope"`
	CPUPerEnvelopeUs  float64 `json:"cpu_per_envelope_us"`
	// FloorUs is the libxml2 parse+validate floor per envelope, measured
	// under the same load as the throughput phase: one floor loop per core,
	// all running at once. FloorRatio is CPUPerEnvelopeUs / FloorUs.
	FloorUs    float64 `json:"floor_us"`
	FloorRatio float64 `json:"floor_ratio"`
	// Floor1CoreUs is the same floor with one loop alone on an otherwise idle
	// machine, and Floor1CoreRatio the cost's ratio to it. On a small VM
	// whose cores slow each other down (shared caches, host contention), the
	// one-core floor is lower than anything a loaded machine achieves, so this
	// ratio also counts the machine's slowdown under load as pump overhead.
	Floor1CoreUs    float64 `json:"floor_1core_us"`
	Floor1CoreRatio float64 `json:"floor_1core_ratio"`
	Cores           int     `json:"cores"`
	Journal         bool    `json:"journal"`
	// Journal A/B (Config.JournalAB): throughput and CPU per envelope in the
	// slices with the journal off and on, and on/off.
	JournalOffPerSec float64 `json:"journal_off_envelopes_per_sec,omitempty"`
	JournalOnPerSec  float64 `json:"journal_on_envelopes_per_sec,omitempty"`
	JournalRatio     float64 `json:"journal_on_off_ratio,omitempty"`
	JournalOffCPUUs  float64 `json:"journal_off_cpu_per_envelope_us,omitempty"`
	JournalOnCPUUs   float64 `json:"journal_on_cpu_per_envelope_us,omitempty"`
	// Metrics A/B (Config.MetricsAB): the same for the pump with metrics
	// (on) and the one without (off), and the scrapes made.
	MetricsOffPerSec float64 `json:"metrics_off_envelopes_per_sec,omitempty"`
	MetricsOnPerSec  float64 `json:"metrics_on_envelopes_per_sec,omitempty"`
	MetricsRatio     float64 `json:"metrics_on_off_ratio,omitempty"`
	MetricsOffCPUUs  float64 `json:"metrics_off_cpu_per_envelope_us,omitempty"`
	MetricsOnCPUUs   float64 `json:"metrics_on_cpu_per_envelope_us,omitempty"`
	MetricsScrapes   int     `json:"metrics_scrapes,omitempty"`
}

// String renders the result for a terminal.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "envelopes/s        %10.0f  (%d envelopes in %.2f s, %d cores, journal %v)\n", r.EnvelopesPerSec, r.Envelopes, r.Seconds, r.Cores, r.Journal)
	fmt.Fprintf(&b, "latency p50 / p99  %7.1f µs / %.1f µs  (ingress→handler at %.0f envelopes/s)\n", r.P50us, r.P99us, r.LatencyRate)
	fmt.Fprintf(&b, "preemptions/s      %10.0f  (the OS took a CPU from a pump thread, during the latency phase)\n", r.PreemptionsPerSec)
	fmt.Fprintf(&b, "allocs/envelope    %10.1f  (%.0f B)\n", r.AllocsPerEnvelope, r.BytesPerEnvelope)
	if r.JournalRatio > 0 {
		fmt.Fprintf(&b, "journal off / on   %10.0f / %.0f envelopes/s  on/off %.3f  (cpu/envelope %.1f / %.1f µs; interleaved slices)\n",
			r.JournalOffPerSec, r.JournalOnPerSec, r.JournalRatio, r.JournalOffCPUUs, r.JournalOnCPUUs)
	}
	if r.MetricsRatio > 0 {
		fmt.Fprintf(&b, "metrics off / on   %10.0f / %.0f envelopes/s  on/off %.3f  (cpu/envelope %.1f / %.1f µs; interleaved slices, %d scrapes)\n",
			r.MetricsOffPerSec, r.MetricsOnPerSec, r.MetricsRatio, r.MetricsOffCPUUs, r.MetricsOnCPUUs, r.MetricsScrapes)
	}
	fmt.Fprintf(&b, "cpu/envelope       %8.1f µs  floor %.1f µs  ratio %.2f×  (floor on %d loaded cores)\n", r.CPUPerEnvelopeUs, r.FloorUs, r.FloorRatio, r.Cores)
	fmt.Fprintf(&b, "                               floor %.1f µs  ratio %.2f×  (floor alone on an idle machine)\n", r.Floor1CoreUs, r.Floor1CoreRatio)
	return b.String()
}

// flow is the two-hop organism under test with its timing probe.
type flow struct {
	p     *pump.Pump
	sunk  atomic.Int64
	probe atomic.Pointer[probe] // set during the latency phase
}

func seqOf(msg string) int64 {
	i := strings.IndexByte(msg, ' ')
	if i < 0 {
		return -1
	}
	n, _ := strconv.ParseInt(msg[:i], 10, 64)
	return n
}

// newFlow builds and starts the flow; obs, when set, is its pump's stage
// observer.
func newFlow(cfg Config, obs pump.StageObserver) (*flow, error) {
	f := &flow{}
	p, err := pump.New(pump.Options{Organism: "bench", Journal: cfg.Journal, Logger: cfg.Logger, Observer: obs,
		ObserveEvery: observe.SampleEvery,
		Threads:      cfg.Threads, Todos: cfg.Todos, Context: cfg.Context,
		MaxConcurrentPipelines: runtime.GOMAXPROCS(0) * 2, MaxConcurrentHandlers: 64, MaxInFlight: 2048})
	if err != nil {
		return nil, err
	}
	shoutT, err := xmlpipe.PayloadTypeOf[hello.GreetingResponse]()
	if err != nil {
		return nil, err
	}
	sinkT, err := xmlpipe.PayloadTypeOf[hello.ShoutedResponse]()
	if err != nil {
		return nil, err
	}
	shout := xmlpipe.Typed(func(ctx context.Context, g *hello.GreetingResponse, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if pr := f.probe.Load(); pr != nil {
			seq := seqOf(g.Message)
			pr.shouting(seq)
			defer pr.shouted(seq)
		}
		return hello.Shout(ctx, g, md)
	})
	sink := xmlpipe.Typed(func(_ context.Context, s *hello.ShoutedResponse, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if pr := f.probe.Load(); pr != nil {
			pr.sunk(seqOf(s.Message))
		}
		f.sunk.Add(1)
		return nil, nil
	})
	if err := p.Register(pump.Listener{Name: "shouter", Description: "shouts", Payload: shoutT, Handler: shout, Workers: 8}); err != nil {
		return nil, err
	}
	if err := p.Register(pump.Listener{Name: "sink", Description: "counts", Payload: sinkT, Handler: sink, Workers: 8}); err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	f.p = p
	return f, nil
}

// envelope builds the external envelope of conversation seq.
func envelope(seq int64, text string) []byte {
	payload := make([]byte, 0, 256)
	payload = append(payload, `<GreetingResponse xmlns=""><Message>`...)
	payload = strconv.AppendInt(payload, seq, 10)
	payload = append(payload, ' ')
	payload = append(payload, text...)
	payload = append(payload, `</Message><OriginalSender>sink</OriginalSender></GreetingResponse>`...)
	return stage.AppendEnvelope(make([]byte, 0, 512+len(text)), "bench", "shouter", stage.NewThreadID(), payload)
}

const greeting = "Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you!"

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Injectors <= 0 {
		cfg.Injectors = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var gate *journalGate
	if cfg.JournalAB && cfg.Journal != nil {
		gate = &journalGate{to: cfg.Journal}
		gate.on.Store(true)
		cfg.Journal = gate
	}
	var (
		mgate *metricsGate
		obs   pump.StageObserver
	)
	if cfg.MetricsAB {
		if gate != nil {
			return Result{}, ErrMetricsAB
		}
		mgate = &metricsGate{m: observe.NewMetrics()}
		obs = mgate
	}
	f, err := newFlow(cfg, obs)
	if err != nil {
		return Result{}, err
	}
	defer f.p.Shutdown(context.Background())
	if mgate != nil {
		if err := mgate.attach(f.p); err != nil {
			return Result{}, err
		}
	}

	// Warm up, then the throughput phase.
	var seq atomic.Int64
	inject := func(ctx context.Context, pace time.Duration) error {
		next := time.Now()
		for ctx.Err() == nil {
			n := seq.Add(1)
			raw := envelope(n, greeting)
			f.probe.Load().injected(n)
			if err := f.p.Inject(ctx, raw, nil); err != nil {
				if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
					return nil
				}
				if errors.Is(err, pump.ErrBusy) {
					continue // not taken after AdmitWait of backpressure: offer the next one
				}
				return err
			}
			if pace > 0 {
				next = next.Add(pace)
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
			}
		}
		return nil
	}
	// phase injects for d, or until ctx ends when d is 0.
	phase := func(ctx context.Context, d time.Duration, injectors int, pace time.Duration) error {
		var (
			pctx   context.Context
			cancel context.CancelFunc
		)
		if d > 0 {
			pctx, cancel = context.WithTimeout(ctx, d)
		} else {
			pctx, cancel = context.WithCancel(ctx)
		}
		defer cancel()
		var wg sync.WaitGroup
		errc := make(chan error, injectors)
		for i := 0; i < injectors; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- inject(pctx, pace)
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				return err
			}
		}
		return nil
	}
	drain := func() {
		for f.p.InFlight() > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	}
	if err := phase(ctx, cfg.Duration/10, cfg.Injectors, 0); err != nil {
		return Result{}, err
	}
	drain()

	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	sunk0 := f.sunk.Load()
	cpu0, t0 := cpuTime(), time.Now()
	var abOn, abOff, mOn, mOff slice
	if mgate != nil {
		actx, stop := context.WithCancel(ctx)
		perr := make(chan error, 1)
		go func() { perr <- phase(actx, 0, cfg.Injectors, 0) }()
		mOn, mOff, err = f.metricsAB(ctx, cfg.Duration, mgate, cfg.ScrapeEvery)
		stop()
		if err := errors.Join(err, <-perr); err != nil {
			return Result{}, err
		}
	} else if gate != nil {
		actx, stop := context.WithCancel(ctx)
		perr := make(chan error, 1)
		go func() { perr <- phase(actx, 0, cfg.Injectors, 0) }()
		abOn, abOff, err = f.journalAB(ctx, cfg.Duration, gate, cfg.Flush)
		stop()
		if err := errors.Join(err, <-perr); err != nil {
			return Result{}, err
		}
	} else if err := phase(ctx, cfg.Duration, cfg.Injectors, 0); err != nil {
		return Result{}, err
	}
	drain()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	runtime.ReadMemStats(&ms1)
	envelopes := 2 * (f.sunk.Load() - sunk0)
	if envelopes == 0 {
		return Result{}, errors.New("bench: no envelope completed")
	}
	r := Result{Envelopes: envelopes, Seconds: elapsed.Seconds(), Cores: runtime.GOMAXPROCS(0), Journal: cfg.Journal != nil}
	r.EnvelopesPerSec = float64(envelopes) / elapsed.Seconds()
	r.AllocsPerEnvelope = float64(ms1.Mallocs-ms0.Mallocs) / float64(envelopes)
	r.BytesPerEnvelope = float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(envelopes)
	r.CPUPerEnvelopeUs = float64(cpu.Microseconds()) / float64(envelopes)
	if gate != nil && abOff.perSec() > 0 {
		r.JournalOffPerSec, r.JournalOnPerSec = abOff.perSec(), abOn.perSec()
		r.JournalRatio = r.JournalOnPerSec / r.JournalOffPerSec
		r.JournalOffCPUUs, r.JournalOnCPUUs = abOff.cpuPerEnvelopeUs(), abOn.cpuPerEnvelopeUs()
	}
	if mgate != nil && mOff.perSec() > 0 {
		r.MetricsOffPerSec, r.MetricsOnPerSec = mOff.perSec(), mOn.perSec()
		r.MetricsRatio = r.MetricsOnPerSec / r.MetricsOffPerSec
		r.MetricsOffCPUUs, r.MetricsOnCPUUs = mOff.cpuPerEnvelopeUs(), mOn.cpuPerEnvelopeUs()
		r.MetricsScrapes = int(mgate.scrapes.Load())
	}

	// Latency at half load: one paced injector per core.
	half := r.EnvelopesPerSec / 2 / 2 // conversations/s (2 envelopes each)
	injectors := runtime.GOMAXPROCS(0)
	pace := time.Duration(float64(time.Second) * float64(injectors) / half)
	latFor := max(cfg.Duration/2, time.Second)
	f.probe.Store(newProbe(seq.Load()+1, int(2*half*latFor.Seconds())+1024))
	nivcsw0 := preemptions()
	sunkL, tl := f.sunk.Load(), time.Now()
	if err := phase(ctx, latFor, injectors, pace); err != nil {
		return Result{}, err
	}
	drain()
	latSecs := time.Since(tl).Seconds()
	r.PreemptionsPerSec = float64(preemptions()-nivcsw0) / latSecs
	r.LatencyRate = float64(2*(f.sunk.Load()-sunkL)) / latSecs
	lat := f.probe.Swap(nil).latencies()
	if len(lat) > 0 {
		r.P50us = float64(lat[len(lat)/2].Nanoseconds()) / 1e3
		r.P99us = float64(lat[len(lat)*99/100].Nanoseconds()) / 1e3
	}

	if err := measureFloor(&r); err != nil {
		return Result{}, err
	}
	return r, nil
}

// floorRounds is how many times each floor is measured; the lowest wins (a
// floor is a lower bound, and the lowest reading is the least disturbed by
// the rest of the machine; it also makes the ratio the least flattering).
const floorRounds = 3

// measureFloor measures the libxml2 parse+validate floor of the bench's
// envelope twice: with one loop per core running at once (the load the
// throughput phase ran under) and with one loop alone.
func measureFloor(r *Result) error {
	in, err := stage.NewIngress(stage.IngressConfig{})
	if err != nil {
		return err
	}
	pt, err := xmlpipe.PayloadTypeOf[hello.GreetingResponse]()
	if err != nil {
		return err
	}
	const n = 10000
	raw := envelope(1, greeting)
	cores := runtime.GOMAXPROCS(0)
	one, loaded := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range floorRounds {
		f, err := in.Floor(raw, pt, n)
		if err != nil {
			return err
		}
		one = min(one, f)
		floors := make([]time.Duration, cores)
		errs := make([]error, cores)
		var wg sync.WaitGroup
		for i := range cores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				floors[i], errs[i] = in.Floor(raw, pt, n)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		var sum time.Duration
		for _, f := range floors {
			sum += f
		}
		loaded = min(loaded, sum/time.Duration(cores))
	}
	r.FloorUs = float64(loaded.Nanoseconds()) / 1e3
	r.Floor1CoreUs = float64(one.Nanoseconds()) / 1e3
	r.FloorRatio = r.CPUPerEnvelopeUs / r.FloorUs
	r.Floor1CoreRatio = r.CPUPerEnvelopeUs / r.Floor1CoreUs
	return nil
}

// preemptions returns the process's involuntary context switches so far.
func preemptions() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Nivcsw
}
