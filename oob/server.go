package oob

import (
	"container/list"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// Defaults of Options.
const (
	// DefaultWindow is how far a request's timestamp may be from now.
	DefaultWindow = 60 * time.Second
	// DefaultReplayMax bounds the replay cache.
	DefaultReplayMax = 100_000
	// DefaultMaxBytes caps one request.
	DefaultMaxBytes = 1 << 20
	// pushQueue bounds the pushes waiting for one slow client.
	pushQueue = 256
	// writeTimeout bounds writing one frame.
	writeTimeout = 10 * time.Second
	// frameTimeout bounds reading one request of a verified connection
	// once its first frame began (a client holding half a frame is
	// closed); a verified one may stay silent as long as it likes (it may
	// be waiting for pushes).
	frameTimeout = 30 * time.Second
	// DefaultAuthTimeout is how long a connection may last without a
	// validly signed request: anyone on the host can connect, and such a
	// connection holds a slot (Options.AuthTimeout).
	DefaultAuthTimeout = 5 * time.Second
	// DefaultMaxUnverified caps the connections that have not sent a
	// validly signed request yet (Options.MaxUnverified).
	DefaultMaxUnverified = 64
)

// Server errors.
var (
	// ErrNoOwnerKey: the server has no owner key to verify requests with.
	ErrNoOwnerKey = errors.New("oob: no owner key")
	// ErrClosed: the server was shut down.
	ErrClosed = errors.New("oob: server closed")
)

// Options configure a Server.
type Options struct {
	// Config is the oob: section (Enabled is the caller's business).
	Config config.OOB
	// Owner verifies every request's signature.
	Owner ed25519.PublicKey
	// Target is what the operations act on.
	Target Target
	// Logger receives logs; refusals are Warn with security=true (default
	// slog.Default()).
	Logger *slog.Logger
	// Clock returns now (default time.Now).
	Clock func() time.Time
	// Window is the timestamp tolerance (default DefaultWindow).
	Window time.Duration
	// ReplayMax bounds the replay cache (default DefaultReplayMax) when
	// Replay is nil.
	ReplayMax int
	// Replay is the replay cache to use (nil: a new one); share one across
	// restarts of the channel.
	Replay *ReplayCache
	// MaxBytes caps one request (default DefaultMaxBytes).
	MaxBytes int
	// AuthTimeout is how long after its accept a connection may last
	// before its first validly signed request is read and verified, its
	// HTTP upgrade included (default DefaultAuthTimeout); it is closed
	// then.
	AuthTimeout time.Duration
	// MaxUnverified caps the connections that have not sent a validly
	// signed request yet (default DefaultMaxUnverified): past it, the
	// oldest of them is closed, so idle local clients hold a bounded
	// number of slots and the owner, who signs at once, gets through.
	MaxUnverified int
}

// Server is the OOB channel: it accepts signed <privileged-msg> requests on
// a loopback WebSocket and/or a Unix socket and answers each with a
// <privileged-response>; subscriptions add <privileged-push> frames.
type Server struct {
	opts   Options
	log    *slog.Logger
	ops    *operations
	replay *ReplayCache

	mu      sync.Mutex
	closed  bool
	servers []*http.Server
	lns     []net.Listener
	conns   map[*conn]struct{}
	// unverified lists the connections without a verified request yet,
	// oldest first.
	unverified list.List
	wg         sync.WaitGroup
}

// New checks the options and builds the server (not listening yet).
func New(opts Options) (*Server, error) {
	if len(opts.Owner) != ed25519.PublicKeySize {
		return nil, ErrNoOwnerKey
	}
	if err := opts.Target.check(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Replay == nil {
		opts.Replay = NewReplayCache(opts.ReplayMax)
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.AuthTimeout <= 0 {
		opts.AuthTimeout = DefaultAuthTimeout
	}
	if opts.MaxUnverified <= 0 {
		opts.MaxUnverified = DefaultMaxUnverified
	}
	s := &Server{opts: opts, log: opts.Logger.With("component", "oob"), replay: opts.Replay,
		conns: map[*conn]struct{}{}}
	s.ops = newOperations(s)
	return s, nil
}

// Start opens the configured sockets (the TCP port unless it is 0, the Unix
// socket when set) and serves them until Shutdown.
func (s *Server) Start() error {
	c := s.opts.Config
	var lns []net.Listener
	fail := func(err error) error {
		for _, l := range lns {
			_ = l.Close()
		}
		return err
	}
	if c.Port != 0 {
		ln, err := s.listenTCP(c)
		if err != nil {
			return fail(err)
		}
		lns = append(lns, ln)
	}
	if c.UnixSocket != "" {
		ln, err := listenUnix(c.UnixSocket)
		if err != nil {
			return fail(err)
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return errors.New("oob: neither a port nor a unix_socket to serve")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fail(ErrClosed)
	}
	for _, ln := range lns {
		srv := &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: s.opts.AuthTimeout,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
			// AuthTimeout counts from the accept (serveHTTP).
			ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, acceptedKey{}, time.Now())
			}}
		// Only upgrades are served: a connection whose request was not one
		// is closed, not kept idle for another.
		srv.SetKeepAlivesEnabled(false)
		s.servers = append(s.servers, srv)
		s.lns = append(s.lns, ln)
		s.wg.Add(1)
		go func(ln net.Listener) {
			defer s.wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("oob: serve", "addr", ln.Addr().String(), "error", err)
			}
		}(ln)
		s.log.Info("OOB channel listening", "addr", ln.Addr().String(), "network", ln.Addr().Network())
	}
	return nil
}

// listenTCP opens the WebSocket port: loopback only (non-loopback peers are
// refused at accept), unless allow_remote_oob, then with TLS.
func (s *Server) listenTCP(c config.OOB) (net.Listener, error) {
	host := strings.TrimSuffix(strings.TrimPrefix(c.Bind, "["), "]") // config.Load leaves it bare; code may not
	addr := net.JoinHostPort(host, strconv.Itoa(c.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oob: %w", err)
	}
	if !isLoopbackHost(host) {
		if !c.AllowRemote || !c.TLS.Enabled() {
			_ = ln.Close()
			return nil, fmt.Errorf("oob: bind %q is not loopback (allow_remote_oob with tls required)", c.Bind)
		}
		cert, err := certs.Load(c.TLS.Cert, c.TLS.Key) // never blocks on a FIFO
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("oob: tls: %w", err)
		}
		return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}), nil
	}
	return &loopbackListener{Listener: ln, log: s.log}, nil
}

// Addrs returns the addresses served (after Start).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, 0, len(s.lns))
	for _, l := range s.lns {
		out = append(out, l.Addr())
	}
	return out
}

// Shutdown closes the sockets and every connection (ending their
// subscriptions) and waits for the serving goroutines, bounded by ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	servers := s.servers
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range conns {
		c.close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	s.ops.close()
	return errors.Join(errs...)
}

var upgrader = websocket.Upgrader{
	ReadBufferSize: 4096, WriteBufferSize: 4096,
	// A browser page must not drive the channel: requests carrying an
	// Origin are refused (ctl sends none).
	CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "" },
}

// serveHTTP upgrades to a WebSocket and serves one connection.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Warn("security event: OOB upgrade refused", "security", true, "remote", r.RemoteAddr, "error", err)
		return
	}
	ws.SetReadLimit(int64(s.opts.MaxBytes))
	accepted, ok := r.Context().Value(acceptedKey{}).(time.Time)
	if !ok {
		accepted = time.Now()
	}
	c := newConn(s, ws, accepted.Add(s.opts.AuthTimeout))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	c.pending = s.unverified.PushBack(c)
	var evicted *conn
	if s.unverified.Len() > s.opts.MaxUnverified {
		evicted = s.unverified.Remove(s.unverified.Front()).(*conn)
		evicted.pending = nil
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	if evicted != nil {
		s.security("unauthenticated OOB connection closed: too many without a signed request",
			"max", s.opts.MaxUnverified)
		evicted.closeWith(websocket.ClosePolicyViolation, "too many connections without a signed request")
	}
	c.run()
	s.mu.Lock()
	delete(s.conns, c)
	if c.pending != nil {
		s.unverified.Remove(c.pending)
		c.pending = nil
	}
	s.mu.Unlock()
}

// acceptedKey is the context key of a connection's accept time.
type acceptedKey struct{}

// verifiedConn takes c off the unverified connections: it sent a validly
// signed request.
func (s *Server) verifiedConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.pending != nil {
		s.unverified.Remove(c.pending)
		c.pending = nil
	}
}

// unverifiedConns counts the connections without a verified request yet.
func (s *Server) unverifiedConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unverified.Len()
}

// security logs a refused request as a security event.
func (s *Server) security(msg string, args ...any) {
	s.log.Warn("security event: "+msg, append([]any{"security", true}, args...)...)
}

// SystemEvent pushes an organism-wide event (a system-event of kind, e.g.
// gateway-connected) to every subscription.
func (s *Server) SystemEvent(kind, message, details string) {
	s.ops.systemEvent(kind, message, details)
}
