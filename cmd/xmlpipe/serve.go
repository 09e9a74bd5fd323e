package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/pump/bus"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Timings of `xmlpipe run`.
const (
	// sessionSweepEvery is how often expired sessions are deleted.
	sessionSweepEvery = 10 * time.Minute
	// busShutdownTimeout bounds closing the bus's sockets on the way out.
	busShutdownTimeout = 15 * time.Second
)

// errNoUsers: the bus would start with nobody able to log in.
var errNoUsers = errors.New("no user can log in to the main bus")

// serveRunner runs the organism and its main bus. A reload (SIGHUP, or
// POST /api/v1/organism/reload) changes the running organism in place
// (organism.Organism.Reload): the bus, its clients and the OOB channel are
// not touched.
type serveRunner struct {
	src      configSource
	data     string
	listen   string
	insecure bool
	log      *slog.Logger
	// level is the logger's level, mutable over OOB (nil: fixed).
	level *slog.LevelVar
	std   streams
	hup   <-chan os.Signal
	// flags are the --data/--config arguments to repeat in suggested
	// commands.
	flags string

	// oobReplay is the OOB channel's replay cache.
	oobReplay *oob.ReplayCache

	// ln is the bus's listening socket (closed on the way out).
	ln        net.Listener
	announced bool
	// obs are the organism's metrics and tracer, when it was built with
	// them as its stage observers (observedBuild).
	obs observers
}

// run assembles and starts the organism, serves the bus until a stop or a
// signal (reloading in place on SIGHUP), then shuts both down and returns
// the exit code.
func (r *serveRunner) run(ctx context.Context) (code int) {
	defer func() {
		if r.ln != nil {
			_ = r.ln.Close()
		}
	}()
	env := catalog.Env{Print: func(thread, from, text string) {
		r.log.Info("output", "thread", thread, "from", from, "text", text)
	}}
	local, err := organism.Assemble(organism.Options{Logger: r.log, Env: env},
		observedBuild(r.src, r.src.durableBuild(r.data), &r.obs))
	if err != nil {
		fmt.Fprintln(r.std.err, err)
		return exitFailure
	}
	defer r.obs.shutdownTracer(r.log) // after the organism's shutdown
	o := local.Organism()
	fail := func(err error) int {
		fmt.Fprintf(r.std.err, "xmlpipe run: %v\n", err)
		if serr := o.Shutdown(context.Background()); serr != nil {
			r.log.Error("shutdown", "error", serr)
		}
		return exitFailure
	}
	setup, err := r.prepareBus(ctx, o)
	if err != nil {
		return fail(err)
	}
	if err := o.Start(); err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	ctl := &runControl{stop: make(chan struct{}, 1), reload: func(via string) error { return r.reload(o, via) }}
	mb, err := r.startBus(local, setup, ctl)
	if err != nil {
		return fail(err)
	}
	oobSrv, err := r.startOOB(o, oob.StopperFunc(ctl.stopWith), oob.ReloaderFunc(func(string) error { return ctl.reload("OOB") }))
	if err != nil {
		if serr := mb.shutdown(); serr != nil {
			r.log.Error("bus shutdown", "error", serr)
		}
		return fail(err)
	}
	r.log.Info("organism running", "organism", o.Config.Organism.Name, "config", r.src.path,
		"listeners", len(o.Pump.Listeners()))

wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-ctl.stop:
			r.log.Info("stop requested", "via", ctl.requester())
			break wait
		case <-r.hup:
			_ = r.reload(o, "SIGHUP") // a refusal is logged; the organism goes on
		case <-mb.done:
			r.log.Error("the main bus stopped on its own")
			code = exitFailure
			break wait
		}
	}
	if ctl.immediate.Load() {
		r.log.Info("shutting down at once: running handlers cancelled, queued messages left for recovery")
	} else {
		r.log.Info("shutting down: draining in-flight messages")
	}
	if err := stopOOB(oobSrv); err != nil {
		r.log.Error("OOB shutdown", "error", err)
	}
	if err := mb.shutdown(); err != nil {
		r.log.Error("bus shutdown", "error", err)
		code = exitFailure
	}
	drainCtx, cancelDrain := ctl.drainContext()
	defer cancelDrain()
	if !ctl.immediate.Load() {
		drain := time.Duration(ctl.drain.Load())
		if drain == 0 { // SIGINT/SIGTERM, the bus API: the pump's own drain time
			drain = o.Pump.ShutdownTimeout()
		}
		defer cutDrain(r.log, o, drain).Stop()
	}
	if err := o.Stop(drainCtx, !ctl.immediate.Load()); err != nil {
		if ctl.drain.Load() > 0 && errors.Is(err, context.DeadlineExceeded) {
			// An OOB shutdown bounded the drain: cutting it short was asked for.
			r.log.Warn("shutdown: the requested drain time ran out", "error", err)
		} else {
			r.log.Error("shutdown", "error", err)
			return exitFailure
		}
	}
	r.log.Info("stopped")
	return code
}

// cutDrain ends a graceful drain once drain has passed, as an immediate
// shutdown would: the handlers still running are cancelled (a WASM guest
// is interrupted, a model request aborted) and what waits stays
// undelivered in the journal for the next start, so the drain time — an
// OOB shutdown's timeout-seconds, else the pump's — bounds the stop however
// long a handler's own deadline is. A handler that ignores the
// cancellation is waited for at most drain more. Stop the returned timer
// once the organism stopped. xmlpipe run and xmlpipe console (with or
// without --serve) stop gracefully this way.
func cutDrain(log *slog.Logger, o *organism.Organism, drain time.Duration) *time.Timer {
	return time.AfterFunc(drain, func() {
		log.Warn("shutdown: the drain time ran out: cancelling the handlers still running")
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		if err := o.ShutdownNow(ctx); err != nil {
			log.Warn("shutdown: handlers still running after the cancellation", "error", err)
		}
	})
}

// reload puts organism.yaml, read again (with its .env), in force in the
// running organism as a diff (organism.Organism.Reload). A configuration
// that does not load or cannot be applied is refused: logged with the
// reason (file:line where there is one) and returned, wrapping
// organism.ErrReloadRefused; the organism goes on with the configuration
// it had. Addresses given on the command line (--data, --listen) are not
// the file's to change.
func (r *serveRunner) reload(o *organism.Organism, via string) error {
	start := time.Now()
	r.log.Info("reloading the organism", "config", r.src.path, "via", via)
	cfg, err := r.src.load()
	if err != nil {
		err = fmt.Errorf("%w: %w", organism.ErrReloadRefused, err)
		r.log.Error("reload refused: the configuration does not load; the running configuration stays", "via", via,
			"error", err)
		return err
	}
	cur := o.CurrentConfig()
	if r.data != "" {
		cfg.Organism.DataDir = cur.Organism.DataDir
	}
	if r.listen != "" {
		cfg.Organism.Port, cfg.Organism.Bind = cur.Organism.Port, cur.Organism.Bind
	}
	rep, err := o.Reload(cfg)
	if err != nil {
		r.log.Error("reload refused; the running configuration stays", "via", via, "error", err)
		return err
	}
	r.log.Info("organism reloaded", "via", via, "took", time.Since(start).Round(time.Microsecond), "added", rep.Added,
		"removed", rep.Removed, "changed", rep.Changed, "unchanged", rep.Unchanged, "new_llm_router", rep.LLM,
		"gateways_added", rep.GatewaysAdded, "gateways_removed", rep.GatewaysRemoved, "gateways_changed", rep.GatewaysChanged)
	return nil
}

// busSetup is what the main bus needs besides the running organism: the
// user service, the TLS configuration with its fingerprint and the
// listening socket. It is prepared before the organism starts, so a bus
// that cannot run stops everything before anything ran.
type busSetup struct {
	svc         *auth.Service
	tls         *tls.Config
	fingerprint string
	ln          net.Listener
}

// prepareBus opens the user service (refusing to go on when nobody could
// log in), the certificate and the listening socket.
func (r *serveRunner) prepareBus(ctx context.Context, o *organism.Organism) (busSetup, error) {
	svc, err := r.users(ctx, o)
	if err != nil {
		return busSetup{}, err
	}
	tlsConf, fingerprint, err := r.certificate(o)
	if err != nil {
		return busSetup{}, err
	}
	ln, err := r.listener(o.Config)
	if err != nil {
		return busSetup{}, err
	}
	return busSetup{svc: svc, tls: tlsConf, fingerprint: fingerprint, ln: ln}, nil
}

// mainBus is the main bus of one started organism: the server on its
// socket and the sweeper of expired sessions.
type mainBus struct {
	srv *bus.Server
	svc *auth.Service
	log *slog.Logger
	// done is closed when Serve returned, with err its result (nil after
	// shutdown).
	done chan struct{}
	err  error

	stopSweep, swept chan struct{}
	// metrics are served at /metrics (nil when disabled).
	metrics *observe.Metrics
}

// startBus serves the main bus of local's started organism with the
// prepared setup and announces where it listens.
func (r *serveRunner) startBus(local *organism.Local, b busSetup, ctl bus.Controller) (*mainBus, error) {
	o := local.Organism()
	legacy := o.Config.Auth.LegacyTOTPLogin
	metrics, err := metricsFor(o, r.obs.metrics)
	if err != nil {
		return nil, err
	}
	opts := bus.Options{Addr: b.ln.Addr().String(), TLS: b.tls, Auth: b.svc, Organism: o,
		Console: local, Logger: r.log, Insecure: r.insecure, Controller: ctl, LegacyTOTPLogin: legacy}
	if metrics != nil {
		opts.Metrics, opts.ScrapeToken = metrics, o.Config.Observability.Metrics.ScrapeToken()
	}
	if o.Federation != nil {
		opts.Federation = o.Federation.Handler()
	}
	srv, err := bus.New(opts)
	if err != nil {
		if metrics != nil {
			metrics.Close()
		}
		return nil, err
	}
	if legacy && !r.insecure {
		r.log.Warn("the legacy /bus login by TOTP code alone is enabled (auth.legacy_totp_login)")
	}
	r.announce(b.ln.Addr(), b.fingerprint)
	m := &mainBus{srv: srv, svc: b.svc, log: r.log, done: make(chan struct{}), stopSweep: make(chan struct{}),
		swept: make(chan struct{}), metrics: metrics}
	go func() {
		m.err = srv.Serve(b.ln)
		close(m.done)
	}()
	go m.sweep()
	return m, nil
}

// sweep deletes expired sessions every sessionSweepEvery until shutdown.
func (m *mainBus) sweep() {
	defer close(m.swept)
	t := time.NewTicker(sessionSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stopSweep:
			return
		case <-t.C:
			if err := m.svc.Sweep(context.Background()); err != nil {
				m.log.Warn("session sweep", "error", err)
			}
		}
	}
}

// shutdown stops the sweeper, closes every socket (bounded by
// busShutdownTimeout) and waits for Serve; it returns what went wrong,
// Serve's own failure included (not its ErrClosed when the shutdown came
// before Serve started).
func (m *mainBus) shutdown() error {
	close(m.stopSweep)
	<-m.swept
	ctx, cancel := context.WithTimeout(context.Background(), busShutdownTimeout)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	<-m.done
	if m.metrics != nil {
		m.metrics.Close()
	}
	if m.err != nil && !errors.Is(m.err, bus.ErrClosed) { // ErrClosed: shut down before it served
		err = errors.Join(err, fmt.Errorf("the main bus stopped: %w", m.err))
	}
	return err
}

// users opens the user service on the organism's store and refuses to go on
// when nobody could log in (unless --insecure-dev).
func (r *serveRunner) users(ctx context.Context, o *organism.Organism) (*auth.Service, error) {
	st := o.Store()
	if st == nil {
		return nil, errors.New("the main bus needs the organism's data directory")
	}
	svc, err := auth.New(st, authOptions(o.Config, r.log))
	if err != nil {
		return nil, err
	}
	users, err := svc.Users(ctx)
	if err != nil {
		return nil, err
	}
	if len(users) == 0 && !r.insecure && o.Federation != nil {
		// Federation peers authenticate by their identities: the bus is
		// of use without users, who can still be added later.
		// The users commands refuse while the organism holds the data
		// directory: the hint says to stop it first.
		r.log.Warn("no bus users yet: only federation peers can connect (to add one, stop the organism, then: xmlpipe users add NAME --role admin" + r.flags + ")")
		return svc, nil
	}
	if len(users) == 0 && !r.insecure {
		return nil, fmt.Errorf("%w. Create an admin first (with the organism stopped):\n\n"+
			"  xmlpipe users add NAME --role admin%s\n\n"+
			"or, for local development only, run with --insecure-dev", errNoUsers, r.flags)
	}
	return svc, nil
}

// certificate is the bus's TLS configuration and certificate fingerprint:
// organism.tls when configured, else the self-signed certificate of the
// data directory (generated on first run). None in insecure dev mode.
func (r *serveRunner) certificate(o *organism.Organism) (*tls.Config, string, error) {
	if r.insecure {
		return nil, "", nil
	}
	var (
		cert tls.Certificate
		err  error
	)
	if t := o.Config.Organism.TLS; t.Enabled() {
		cert, err = certs.Load(t.Cert, t.Key)
	} else {
		var hosts []string
		if host, _, herr := net.SplitHostPort(r.listen); herr == nil && host != "" {
			hosts = append(hosts, host)
		}
		cert, err = certs.SelfSigned(o.Store().Dir(), hosts, time.Now)
	}
	if err != nil {
		return nil, "", err
	}
	return certs.ServerConfig(cert), certs.Fingerprint(cert), nil
}

// listener opens the bus's listening socket: --listen, else
// organism.bind and organism.port (default 127.0.0.1:8765). In insecure
// dev mode (no TLS, no login) only a loopback address is accepted.
func (r *serveRunner) listener(cfg *config.Organism) (net.Listener, error) {
	addr := r.listen
	if addr == "" {
		addr = net.JoinHostPort(strings.Trim(cfg.Organism.Bind, "[]"), strconv.Itoa(cfg.Organism.Port))
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("main bus: %q is not host:port (as 127.0.0.1:8765, [::1]:8765 or :8765): %w", addr, err)
	}
	if r.insecure {
		if !loopbackHost(host) {
			return nil, fmt.Errorf("%w: --insecure-dev serves without TLS or login, so only on a loopback address "+
				"(127.0.0.1, ::1, localhost), not %q", errInsecureAddr, addr)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("main bus: %w", err)
	}
	r.ln = l
	return l, nil
}

// errInsecureAddr: --insecure-dev with an address others can reach.
var errInsecureAddr = errors.New("refusing to serve insecurely beyond this machine")

// loopbackHost reports a host that is this machine only: localhost or a
// loopback IP ("" — every interface — is not).
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// announce prints, once, where the bus listens and the certificate
// fingerprint clients pin. A bus on every interface (0.0.0.0, ::, or
// --listen :PORT) is announced at a URL this machine can connect to
// (localhost), with a note that other machines can reach it too.
func (r *serveRunner) announce(addr net.Addr, fingerprint string) {
	if r.announced {
		return
	}
	r.announced = true
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		host, port = addr.String(), ""
	}
	reach := ""
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
		reach = " (listening on every interface: other machines can reach it)"
	}
	hostport := net.JoinHostPort(host, port)
	if r.insecure {
		fmt.Fprintf(r.std.out, "xmlpipe: main bus on http://%s — INSECURE DEV MODE: no TLS, no authentication\n", hostport)
		return
	}
	fmt.Fprintf(r.std.out, "xmlpipe: main bus on https://%s%s\n", hostport, reach)
	fmt.Fprintf(r.std.out, "xmlpipe: certificate fingerprint SHA256 %s\n", fingerprint)
	fmt.Fprintf(r.std.out, "xmlpipe: connect with: xmlpipe console --connect https://%s --fingerprint %s\n",
		hostport, fingerprint)
}
