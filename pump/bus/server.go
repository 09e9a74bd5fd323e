package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ErrClosed is returned by Serve after Shutdown started.
var ErrClosed = errors.New("bus: server closed")

// Server is the main bus: the HTTP API and the /ws, /bus and /api/v1/ws
// WebSockets over one organism. Create it with New, serve it with Serve (or
// mount Handler), stop it with Shutdown.
type Server struct {
	opts    Options
	log     *slog.Logger
	pump    *pump.Pump
	core    stage.CoreTypes
	handler http.Handler
	up      websocket.Upgrader

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	router  *router
	streams *socketSet[*streamSocket]
	// wsocks are the open /ws sockets (governance pushes, api_govern.go).
	wsocks *socketSet[*wsSocket]
	logs   *socketSet[*logSocket]
	slots  *slotIndexes
	killed *killedSet
	// turns are the decisions of the conversations' running answers (for
	// the status their completion is streamed with).
	turns  *turnDecisions
	live   *liveConversations
	states *agentStates

	injectMu sync.Mutex // serialises API injects onto existing threads

	mu       sync.Mutex
	conns    map[*conn]struct{}
	http     *http.Server
	closed   bool
	stopSubs []func()

	// sockets count the frames and network writes of every socket.
	sockets socketCounters

	// names keeps the participants of the threads whose visibility to a
	// user with a profile was judged lately (threadConversation).
	names *threadNames

	// writeGate, when set (tests only), makes every socket writer wait for a
	// token before each frame: a client that cannot drain its socket.
	writeGate chan struct{}
}

// New builds a server over opts.Organism; it subscribes to the organism's
// events at once (call Shutdown to release them).
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	core, err := stage.Core()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:    opts,
		log:     opts.Logger.With("component", "bus"),
		pump:    opts.Organism.Pump,
		core:    core,
		ctx:     ctx,
		cancel:  cancel,
		router:  newRouter(),
		streams: newSocketSet[*streamSocket](),
		wsocks:  newSocketSet[*wsSocket](),
		logs:    newSocketSet[*logSocket](),
		killed:  newKilledSet(killedRemembered),
		live:    &liveConversations{set: map[string]struct{}{}},
		names:   newThreadNames(maxThreadNames),
		conns:   map[*conn]struct{}{},
	}
	var since int64
	if opts.Store != nil {
		since = opts.Store.Assigned()
	}
	s.turns = newTurnDecisions(s, since)
	s.slots = newSlotIndexes(func(thread string) int {
		if tc, ok := s.pump.Context().Thread(thread); ok {
			return tc.Len()
		}
		return 0
	}, func() bool { return !s.logs.empty() })
	s.up = websocket.Upgrader{
		HandshakeTimeout: opts.WriteTimeout,
		Subprotocols:     []string{bearerProtocol},
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			writeError(w, status, reason.Error())
		},
	}
	s.states = newAgentStates(s)
	s.handler = s.routes()
	if opts.Metrics != nil {
		opts.Metrics.CountConnections(s.connections)
	}
	s.stopSubs = append(s.stopSubs,
		s.pump.Watch(pump.OutletFunc(s.slots.observe)),
		s.pump.Subscribe(pump.OutletFunc(s.onEvent)),
		opts.Console.Subscribe(s.onOutput),
		opts.Organism.Governance().Subscribe(s.onGovernance))
	if opts.Insecure {
		s.log.Warn("INSECURE DEV MODE: plain HTTP, no authentication, every client is an admin — never expose this port",
			"security", true)
	}
	return s, nil
}

// Handler returns the server's HTTP handler (for tests and custom servers;
// Serve uses it).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln until Shutdown: TLS with opts.TLS, or
// plain HTTP in insecure dev mode. It returns nil after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	hs := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.opts.TLS,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.http = hs
	s.mu.Unlock()
	var err error
	if s.opts.Insecure {
		s.log.Warn("serving plain HTTP without authentication (insecure dev mode)", "addr", ln.Addr().String(),
			"security", true)
		err = hs.Serve(ln)
	} else {
		s.log.Info("serving the main bus", "addr", ln.Addr().String())
		err = hs.ServeTLS(ln, "", "")
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, closes every WebSocket with 1001,
// waits for the server's goroutines (or ctx) and releases the organism
// subscriptions. The organism itself is not stopped.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	hs := s.http
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	var err error
	if hs != nil {
		err = hs.Shutdown(ctx)
	}
	for _, c := range conns {
		c.close(websocket.CloseGoingAway, "Server shutting down")
	}
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("bus: shutdown: %w", ctx.Err()))
	}
	for _, stop := range s.stopSubs {
		stop()
	}
	return err
}

// enter registers a WebSocket handler with Shutdown's wait; it is false once
// Shutdown started. Every successful enter is paired with leave.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// leave ends what enter started.
func (s *Server) leave() { s.wg.Done() }

// track remembers a live socket; a socket opened during Shutdown is closed.
func (s *Server) track(c *conn) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.conns[c] = struct{}{}
	}
	s.mu.Unlock()
	if closed {
		c.close(websocket.CloseGoingAway, "Server shutting down")
	}
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// onEvent fans a pump event out to the conversation's sockets, the event
// streams and the message log. It runs inside the pump and never blocks.
func (s *Server) onEvent(e pump.Event) {
	s.live.event(e)
	s.router.event(e)
	s.streamEvents(e)
	s.logEvent(e)
}

// onOutput routes a printed line to its conversation's sockets, and a
// piece of an agent's streamed text also to the event streams.
func (s *Server) onOutput(o organism.Output) {
	switch o.Kind {
	case organism.OutputPrint:
		s.router.output(o)
	case organism.OutputDelta:
		s.router.output(o)
		s.streamDelta(o)
	}
}

// clientAddr is the request's remote IP (for rate limits and logs).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
