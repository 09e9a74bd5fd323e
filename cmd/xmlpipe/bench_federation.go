package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// FedEcho is what the federation bench's callers send through the link.
type FedEcho struct {
	Text string
}

// FedEchoed is the echo listener's answer.
type FedEchoed struct {
	Text string
}

// fedBenchConfig configures runFedBench.
type fedBenchConfig struct {
	// Callers are the goroutines calling through the link at once in the
	// throughput phase, each waiting for its answer (closed loop).
	Callers int
	// Duration is the throughput phase's length.
	Duration time.Duration
	// Grace bounds the wait for the answers still open when it ends.
	Grace time.Duration
	// Samples is how many sequential calls the latency phase makes across
	// the link, and as many locally.
	Samples int
	// Floor is how many times the floor's operations are timed.
	Floor int
	// Statements measures the store statements per call (fedBench's
	// SequentialByStatement and ByStatement, in the JSON and the text
	// output); without it they are not counted at all.
	Statements bool
}

// fedBench is the result of `xmlpipe bench --federation`.
type fedBench struct {
	Callers int     `json:"callers"`
	Seconds float64 `json:"seconds"`
	Cores   int     `json:"cores"`
	// Calls are the calls answered within the throughput phase.
	Calls       int64   `json:"calls"`
	CallsPerSec float64 `json:"calls_per_sec"`
	// Envelopes are the signed envelopes the link carried in the
	// throughput phase, both ways (a call and its reply: two).
	Envelopes       int64   `json:"envelopes"`
	EnvelopesPerSec float64 `json:"envelopes_per_sec"`
	// Lost are calls never answered by the end of the grace period;
	// Errors calls answered with a <huh> or failed to send; Refused the
	// envelopes either side refused (signature, duplicate, …).
	Lost        int64    `json:"lost"`
	Errors      int64    `json:"errors"`
	Refused     int64    `json:"refused"`
	FirstErrors []string `json:"first_errors,omitempty"`
	// LinkP50us and LocalP50us are one call at a time, across the link
	// (A → link → B's echo → link → A) and on B's own pump; AddedPerHopUs
	// is half their difference (a call crosses the link twice).
	LinkP50us     float64 `json:"link_p50_us"`
	LinkP99us     float64 `json:"link_p99_us"`
	LocalP50us    float64 `json:"local_p50_us"`
	AddedPerHopUs float64 `json:"added_latency_per_hop_us"`
	Samples       int     `json:"samples"`
	// SequentialCommits are the commits of both organisms' stores while
	// one sequential call crossed the link (start to answer), per call:
	// the commits it waits for, and any that competed with it for the
	// CPU. A local call waits for one.
	SequentialCommits float64 `json:"commits_per_sequential_call"`
	// SequentialStatements and SequentialFrames are the SQL statements
	// both stores' writers ran, and the WAL pages their commits wrote,
	// over the same spans, per call: the store's work a sequential call
	// waits for, which the load of the machine does not move.
	SequentialStatements float64 `json:"statements_per_sequential_call"`
	SequentialFrames     float64 `json:"wal_frames_per_sequential_call"`
	// CPUPerEnvelopeUs is the process's CPU (user + system; both
	// organisms and the callers) over the throughput phase per envelope.
	CPUPerEnvelopeUs float64 `json:"cpu_per_envelope_us"`
	// The floor, timed in the same run on one of the link's envelopes:
	// Ed25519 signing and verifying its SignedInfo and libxml2's
	// exclusive C14N of the signed envelope.
	SignUs   float64 `json:"sign_us"`
	VerifyUs float64 `json:"verify_us"`
	C14NUs   float64 `json:"c14n_us"`
	FloorUs  float64 `json:"floor_us"`
	// FloorRatio is CPUPerEnvelopeUs ÷ FloorUs.
	FloorRatio float64 `json:"floor_ratio"`
	// EnvsigSignUs and EnvsigVerifyUs are envsig.Sign and envsig.Verify
	// of the same envelope whole (XML-DSig, C14N and Ed25519 together).
	EnvsigSignUs   float64 `json:"envsig_sign_us"`
	EnvsigVerifyUs float64 `json:"envsig_verify_us"`
	// JournalCommits are the durable commits of both organisms' stores
	// per envelope over the throughput phase — every commit there is: the
	// federation state lives in the store and its writes share the
	// journal's group commits. StateCommits are those of them that carried
	// federation state writes: a part of JournalCommits, not commits of
	// their own (before the state moved into the store, it had a database
	// and a commit stream of its own, counted in addition). The cost of
	// durability, which the load of the machine moves less than it moves
	// the CPU figures.
	StateCommits   float64 `json:"state_commits_per_envelope"`
	JournalCommits float64 `json:"journal_commits_per_envelope"`
	// Statements are the SQL statements both stores' writers ran per
	// envelope, and WALFrames the pages their commits wrote to the WAL:
	// what durability costs in work, which load does not move.
	Statements float64 `json:"statements_per_envelope"`
	WALFrames  float64 `json:"wal_frames_per_envelope"`
	// SequentialByStatement are the statements each organism's writer ran
	// per sequential call, from the settled stores before it to the
	// settled stores after it (its acknowledgements and the writes riding
	// later commits included); ByStatement those per call over the
	// throughput phase. Measured and printed only with --statements.
	SequentialByStatement []fedStatement `json:"sequential_statements,omitempty"`
	ByStatement           []fedStatement `json:"statements,omitempty"`
	// statements is fedBenchConfig.Statements, for String.
	statements bool
}

// fedCounter is the gateways' observer: it counts the envelopes sent
// (each one signed) and the refusals of both organisms.
type fedCounter struct {
	out, refused atomic.Int64
}

// Envelope counts an envelope sent (signed) by either organism.
func (c *fedCounter) Envelope(_, direction string, _ federation.Kind) {
	if direction == federation.DirectionOut {
		c.out.Add(1)
	}
}

// Refused counts a refusal by either organism.
func (c *fedCounter) Refused(string, string) { c.refused.Add(1) }

// RoundTrip is not counted.
func (c *fedCounter) RoundTrip(string, time.Duration) {}

// snapshot returns the counts so far.
func (c *fedCounter) snapshot() (out, refused int64) { return c.out.Load(), c.refused.Load() }

var _ federation.Observer = (*fedCounter)(nil)

// fedPair is the two organisms of the bench: A imports B's echo through
// gateway "b"; B serves its federation endpoint on a loopback TLS port.
type fedPair struct {
	a, b   *organism.Organism
	keyA   ed25519.PrivateKey
	pubB   ed25519.PublicKey
	count  *fedCounter
	srv    *http.Server
	served chan error
	// keys memoises statementKey by query text for statementSnapshot.
	keys map[string]string
}

// startFedPair builds and starts the two durable organisms in dir.
func startFedPair(dir string, log *slog.Logger) (*fedPair, error) {
	dirA, dirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{dirA, dirB} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if _, err := keys.Init(keys.PathsFor(d, "")); err != nil {
			return nil, err
		}
	}
	if err := keys.Export(keys.PathsFor(dirA, ""), filepath.Join(dirB, "a.pub")); err != nil {
		return nil, err
	}
	if err := keys.Export(keys.PathsFor(dirB, ""), filepath.Join(dirA, "b.pub")); err != nil {
		return nil, err
	}
	keyA, err := keys.ReadPrivate(keys.PathsFor(dirA, "").Organism)
	if err != nil {
		return nil, err
	}
	keyB, err := keys.ReadPrivate(keys.PathsFor(dirB, "").Organism)
	if err != nil {
		return nil, err
	}
	p := &fedPair{keyA: keyA, pubB: keyB.Public().(ed25519.PublicKey), count: &fedCounter{}, served: make(chan error, 1)}
	cfgB, err := config.Parse(filepath.Join(dirB, "organism.yaml"), fmt.Appendf(nil, `organism: {name: bench-b, data_dir: %q}
max_concurrent_handlers: 64
oob: {enabled: false}
meta: {allow_remote: true}
gateways:
  - {name: a, trusted_identity: %q, export: [FedEcho]}
`, dirB, filepath.Join(dirB, "a.pub")))
	if err != nil {
		return nil, err
	}
	echo := organism.Func("echo", "Echoes the text upper-cased",
		func(_ context.Context, e *FedEcho, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Respond(&FedEchoed{Text: strings.ToUpper(e.Text)}), nil
		})
	if p.b, err = organism.New(cfgB, organism.Options{DataDir: dirB, Logger: log, Listeners: []organism.Listener{echo},
		GatewayObserver: p.count}); err != nil {
		return nil, err
	}
	if err := p.b.Start(); err != nil {
		return nil, errors.Join(err, p.b.Shutdown(context.Background()))
	}
	cert, err := certs.SelfSigned(dirB, []string{"127.0.0.1"}, time.Now)
	if err != nil {
		return nil, p.close(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, p.close(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+federation.Path, p.b.Federation.Handler())
	p.srv = &http.Server{Handler: mux, TLSConfig: certs.ServerConfig(cert), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { p.served <- p.srv.ServeTLS(ln, "", "") }()

	cfgA, err := config.Parse(filepath.Join(dirA, "organism.yaml"), fmt.Appendf(nil, `organism: {name: bench-a, data_dir: %q}
max_concurrent_handlers: 256
oob: {enabled: false}
gateways:
  - {name: b, remote_url: "wss://%s", trusted_identity: %q, import: [FedEcho], call_timeout: 60s}
`, dirA, ln.Addr().String(), filepath.Join(dirA, "b.pub")))
	if err != nil {
		return nil, p.close(err)
	}
	if p.a, err = organism.New(cfgA, organism.Options{DataDir: dirA, Logger: log, GatewayObserver: p.count}); err != nil {
		return nil, p.close(err)
	}
	if err := p.a.Start(); err != nil {
		return nil, p.close(errors.Join(err, p.a.Shutdown(context.Background())))
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := p.a.Federation.Status()
		if _, ok := p.a.Pump.Lookup("echo"); ok && len(st) == 1 && st[0].Connected {
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, p.close(errors.New("the link between the two organisms did not come up within 30s"))
		}
	}
}

// closeBudget bounds each step of a fedPair's close.
const closeBudget = 15 * time.Second

// closeStep is one step of a fedPair's close: what it stops, and how.
type closeStep struct {
	what string
	stop func(context.Context) error
}

// closeSteps runs steps in order, each with a budget of its own: a step
// that overruns cannot leave the next one an expired context (with which
// a pump's shutdown reports "0 messages still in flight: context deadline
// exceeded"), and an error names its step and how long it took.
func closeSteps(budget time.Duration, steps ...closeStep) error {
	var errs []error
	for _, s := range steps {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		start := time.Now()
		if err := s.stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s (after %s): %w", s.what, time.Since(start).Round(time.Millisecond), err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// close shuts both organisms and the server down, joining cause.
func (p *fedPair) close(cause error) error {
	var steps []closeStep
	if p.a != nil {
		steps = append(steps, closeStep{"organism a: shutdown", p.a.Shutdown})
	}
	if p.srv != nil {
		steps = append(steps, closeStep{"organism b: federation server", func(ctx context.Context) error {
			err := p.srv.Shutdown(ctx)
			if served := <-p.served; !errors.Is(served, http.ErrServerClosed) {
				err = errors.Join(err, served)
			}
			return err
		}})
	}
	if p.b != nil {
		steps = append(steps, closeStep{"organism b: shutdown", p.b.Shutdown})
	}
	return errors.Join(cause, closeSteps(closeBudget, steps...))
}

// fedCall sends one FedEcho to echo on o and waits (bounded by wait) for its
// answer; it reports lost when none came in time.
func fedCall(o *organism.Organism, text string, wait time.Duration) (lost bool, err error) {
	done := make(chan error, 1)
	want := strings.ToUpper(text)
	_, err = o.Pump.Send(context.Background(), "console", "echo", &FedEcho{Text: text}, pump.OutletFunc(func(e pump.Event) {
		switch e.Kind {
		case pump.EventReply:
			var got error
			if !strings.Contains(string(e.Envelope), ">"+want+"<") {
				got = fmt.Errorf("wrong answer to %q: %s", text, e.Envelope)
			}
			select {
			case done <- got:
			default:
			}
		case pump.EventHuh:
			select {
			case done <- fmt.Errorf("huh: %s", e.Error):
			default:
			}
		}
	}))
	if err != nil {
		return false, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		return false, err
	case <-t.C:
		return true, nil
	}
}

// runFedBench is `xmlpipe bench --federation`: two durable organisms in
// this process linked over TLS on loopback. It measures one call at a time
// across the link and locally, then cfg.Callers calling at once for
// cfg.Duration, then the floor.
func runFedBench(ctx context.Context, cfg fedBenchConfig) (fedBench, error) {
	dir, err := os.MkdirTemp("", "xmlpipe-fedbench-")
	if err != nil {
		return fedBench{}, err
	}
	defer os.RemoveAll(dir)
	p, err := startFedPair(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		return fedBench{}, err
	}
	r, err := p.measure(ctx, cfg)
	return r, p.close(err)
}

// measure runs the bench's phases on a started pair.
func (p *fedPair) measure(ctx context.Context, cfg fedBenchConfig) (fedBench, error) {
	r := fedBench{Callers: cfg.Callers, Cores: runtime.GOMAXPROCS(0), Samples: cfg.Samples, statements: cfg.Statements}
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		r.Errors++
		if len(r.FirstErrors) < 5 {
			r.FirstErrors = append(r.FirstErrors, err.Error())
		}
	}
	// Warm up: both organisms' caches, the link's buffers.
	for i := range min(200, 4*cfg.Samples) {
		if lost, err := fedCall(p.a, fmt.Sprintf("warm-%d", i), cfg.Grace); err != nil || lost {
			return r, fmt.Errorf("warm-up call %d: lost %v: %w", i, lost, err)
		}
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
	}
	// Latency: alternate a call across the link and the same call local
	// to B, one at a time.
	link, local := make([]time.Duration, 0, cfg.Samples), make([]time.Duration, 0, cfg.Samples)
	var seqCommits, seqStatements, seqFrames int64
	seqByStatement, linkStart := stmtSnapshot{}, stmtSnapshot{}
	for i := range cfg.Samples {
		for _, s := range []struct {
			o   *organism.Organism
			out *[]time.Duration
		}{{p.a, &link}, {p.b, &local}} {
			// Each call starts from settled stores: what the previous
			// call left queued (an outbox entry, marks) commits before the
			// clock starts, so neither call pays for the other's writes.
			if err := p.settle(ctx); err != nil {
				return r, err
			}
			// A link call's statements run from the settled stores
			// before it to those before the local call after it.
			// Only when asked for: a snapshot walks both stores' statement
			// texts, hundreds of them, around every sequential call.
			switch {
			case !cfg.Statements:
			case s.o == p.a:
				linkStart = p.statementSnapshot()
			default:
				seqByStatement.add(linkStart, p.statementSnapshot())
			}
			_, c0 := p.commits()
			s0, f0 := p.writes()
			start := time.Now()
			lost, err := fedCall(s.o, fmt.Sprintf("lat-%d", i), cfg.Grace)
			if err != nil || lost {
				return r, fmt.Errorf("latency call %d: lost %v: %w", i, lost, err)
			}
			*s.out = append(*s.out, time.Since(start))
			if s.o == p.a {
				_, c1 := p.commits()
				s1, f1 := p.writes()
				seqCommits += c1 - c0
				seqStatements += s1 - s0
				seqFrames += f1 - f0
			}
		}
	}
	slices.Sort(link)
	slices.Sort(local)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	if n := len(link); n > 0 {
		r.LinkP50us, r.LinkP99us, r.LocalP50us = us(link[n/2]), us(link[n*99/100]), us(local[n/2])
		r.AddedPerHopUs = (r.LinkP50us - r.LocalP50us) / 2
		r.SequentialCommits = float64(seqCommits) / float64(n)
		r.SequentialStatements = float64(seqStatements) / float64(n)
		r.SequentialFrames = float64(seqFrames) / float64(n)
		if cfg.Statements {
			r.SequentialByStatement = seqByStatement.perCall(int64(n))
		}
	}

	// Throughput: Callers closed-loop callers for Duration.
	out0, refused0 := p.count.snapshot()
	state0, journal0 := p.commits()
	stmts0, frames0 := p.writes()
	var byStatement0 stmtSnapshot
	if cfg.Statements {
		byStatement0 = p.statementSnapshot()
	}
	cpu0 := processCPU()
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	var calls, lost atomic.Int64
	var wg sync.WaitGroup
	for c := range cfg.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				l, err := fedCall(p.a, fmt.Sprintf("c%d-%d", c, i), cfg.Duration+cfg.Grace)
				switch {
				case l:
					lost.Add(1)
				case err != nil:
					fail(err)
				default:
					calls.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	out1, refused1 := p.count.snapshot()
	state1, journal1 := p.commits()
	stmts1, frames1 := p.writes()
	if cfg.Statements {
		byStatement := stmtSnapshot{}
		byStatement.add(byStatement0, p.statementSnapshot())
		r.ByStatement = byStatement.perCall(calls.Load())
	}
	r.Seconds, r.Calls, r.Lost = elapsed.Seconds(), calls.Load(), lost.Load()
	r.Envelopes, r.Refused = out1-out0, refused1-refused0
	r.CallsPerSec = float64(r.Calls) / elapsed.Seconds()
	r.EnvelopesPerSec = float64(r.Envelopes) / elapsed.Seconds()
	if r.Envelopes > 0 {
		r.CPUPerEnvelopeUs = us(cpu) / float64(r.Envelopes)
		r.StateCommits = float64(state1-state0) / float64(r.Envelopes)
		r.JournalCommits = float64(journal1-journal0) / float64(r.Envelopes)
		r.Statements = float64(stmts1-stmts0) / float64(r.Envelopes)
		r.WALFrames = float64(frames1-frames0) / float64(r.Envelopes)
	}
	if err := p.floor(&r, cfg.Floor); err != nil {
		return r, err
	}
	if r.FloorUs > 0 {
		r.FloorRatio = r.CPUPerEnvelopeUs / r.FloorUs
	}
	return r, ctx.Err()
}

// settle waits for the acknowledgements still on their way and commits
// what both organisms' stores have queued.
func (p *fedPair) settle(ctx context.Context) error {
	// The previous call's acknowledgements first: the caller acknowledges
	// the answer once its output is durable, and the callee deletes its
	// outbox entry when that arrives, which would otherwise land in the
	// next call measured (a local call on the callee, slowed by it).
	deadline := time.Now().Add(5 * time.Second)
	for p.queued() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("settle between latency calls: %d envelopes still unacknowledged after 5s", p.queued())
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(20 * time.Microsecond)
	}
	for _, o := range []*organism.Organism{p.a, p.b} {
		if err := o.Store().Flush(ctx); err != nil {
			return fmt.Errorf("settle the store between latency calls: %w", err)
		}
	}
	return nil
}

// queued counts the envelopes both organisms' gateways hold for their
// peer's acknowledgement.
func (p *fedPair) queued() int {
	n := 0
	for _, o := range []*organism.Organism{p.a, p.b} {
		for _, g := range o.Federation.Status() {
			n += g.Queued
		}
	}
	return n
}

// commits counts both organisms' store commits (journal) and, of them,
// those that carried federation state writes (state).
func (p *fedPair) commits() (state, journal int64) {
	for _, o := range []*organism.Organism{p.a, p.b} {
		state += o.Federation.StateCommits()
		journal += o.Store().Stats().Commits
	}
	return state, journal
}

// writes counts both organisms' store statements and WAL frames.
func (p *fedPair) writes() (statements, frames int64) {
	for _, o := range []*organism.Organism{p.a, p.b} {
		statements += o.Store().Statements()
		frames += o.Store().Stats().WALFrames
	}
	return statements, frames
}

// floor times, on this goroutine's thread, what no implementation of the
// link can skip for one of its envelopes: Ed25519 over its SignedInfo by
// the sender, the receiver's verification of that, and the exclusive C14N
// of the envelope; and envsig's Sign and Verify of the same envelope.
func (p *fedPair) floor(r *fedBench, n int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unsigned := fmt.Appendf(nil, `<message xmlns="%s"><meta><from>bench-a</from><to>echo</to><thread>%s</thread>`+
		`<link xmlns="%s" id="%s" kind="call" sent="%s"></link></meta><FedEcho><Text>c7-1234</Text></FedEcho></message>`,
		schemas.EnvelopeNS, stage.NewThreadID(), federation.NS, stage.NewThreadID(), time.Now().UTC().Format(time.RFC3339Nano))
	signed, err := envsig.Sign(p.keyA, unsigned)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	parts, err := stage.SplitSignature(signed, envsig.Namespace, "Signature")
	if err != nil || len(parts.SignedInfo) == 0 {
		return fmt.Errorf("floor: no SignedInfo: %w", err)
	}
	si := parts.SignedInfo
	pubA := p.keyA.Public().(ed25519.PublicKey)
	var sig []byte
	var ferr error
	timed := func(f func()) float64 {
		t0 := threadCPU()
		for range n {
			f()
		}
		return float64((threadCPU() - t0).Nanoseconds()) / 1e3 / float64(n)
	}
	r.SignUs = timed(func() { sig = ed25519.Sign(p.keyA, si) })
	r.VerifyUs = timed(func() {
		if !ed25519.Verify(pubA, si, sig) {
			ferr = errors.New("floor: the signature does not verify")
		}
	})
	r.C14NUs = timed(func() {
		if _, err := stage.Canonicalize(signed); err != nil {
			ferr = err
		}
	})
	r.FloorUs = r.SignUs + r.VerifyUs + r.C14NUs
	r.EnvsigSignUs = timed(func() {
		if _, err := envsig.Sign(p.keyA, unsigned); err != nil {
			ferr = err
		}
	})
	r.EnvsigVerifyUs = timed(func() {
		if err := envsig.Verify(pubA, signed); err != nil {
			ferr = err
		}
	})
	return ferr
}

// processCPU is the process's CPU time so far (user + system).
func processCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// threadCPU is the calling thread's CPU time so far (user + system).
func threadCPU() time.Duration { return rusage(1) } // RUSAGE_THREAD

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// String formats the result as the other bench modes do.
func (r fedBench) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "signed envelopes/s %10.0f  per link (%d envelopes, %.0f calls/s, %d callers, %.2f s, %d cores)\n",
		r.EnvelopesPerSec, r.Envelopes, r.CallsPerSec, r.Callers, r.Seconds, r.Cores)
	fmt.Fprintf(&b, "added latency      %8.0f µs  per hop (call p50 %.0f µs across the link, %.0f µs local; p99 %.0f µs; %d samples)\n",
		r.AddedPerHopUs, r.LinkP50us, r.LocalP50us, r.LinkP99us, r.Samples)
	fmt.Fprintf(&b, "commits/seq call   %10.2f  store commits of both organisms while one sequential call crossed the link\n",
		r.SequentialCommits)
	fmt.Fprintf(&b, "writes/seq call    %10.2f  store statements, %.2f WAL frames (both organisms, over the same spans)\n",
		r.SequentialStatements, r.SequentialFrames)
	fmt.Fprintf(&b, "cpu/envelope       %8.1f µs  (both organisms and the callers, user + system)\n", r.CPUPerEnvelopeUs)
	fmt.Fprintf(&b, "floor              %8.1f µs  (Ed25519 sign %.1f + verify %.1f + exclusive C14N %.1f; envsig Sign %.1f, Verify %.1f)\n",
		r.FloorUs, r.SignUs, r.VerifyUs, r.C14NUs, r.EnvsigSignUs, r.EnvsigVerifyUs)
	fmt.Fprintf(&b, "floor ratio        %10.2f  (cpu/envelope ÷ floor)\n", r.FloorRatio)
	fmt.Fprintf(&b, "commits/envelope   %10.2f  store commits of both organisms (journal), %.2f of them carrying federation state\n",
		r.JournalCommits, r.StateCommits)
	fmt.Fprintf(&b, "writes/envelope    %10.2f  store statements, %.2f WAL frames (both organisms)\n", r.Statements, r.WALFrames)
	fmt.Fprintf(&b, "lost / errors      %10d / %d  refused %d\n", r.Lost, r.Errors, r.Refused)
	if r.statements {
		printStatements(&b, "sequential", r.SequentialByStatement)
		printStatements(&b, "throughput", r.ByStatement)
	}
	for _, e := range r.FirstErrors {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return b.String()
}

// printFedBench prints r as text or JSON.
func printFedBench(w io.Writer, r fedBench, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprint(w, r.String())
}
