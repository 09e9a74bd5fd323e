package federation

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// Options configure a Manager.
type Options struct {
	// Organism is this organism's name (the <from> of what it sends, and
	// what its handshakes name); required.
	Organism string
	// Key is the organism's Ed25519 identity.
	Key ed25519.PrivateKey
	// Gateways are organism.yaml's gateways[].
	Gateways []config.Gateway
	// Pump is the organism's pump: imports are added to it, calls from
	// peers injected into it.
	Pump *pump.Pump
	// Store is the organism's store: the federation state is kept in its
	// database (tables federation_*, schema.go) and written by its writer,
	// in the journal's group commits; a federation.db earlier versions
	// left in its directory is moved into it once. The caller closes it
	// after Close. nil keeps the state in memory (an organism without a
	// data directory). The pump must journal into it (as an organism's
	// does): a call is named by the journal seq of the message that makes
	// it and leaves once that seq is durable (gateway.openByID).
	Store *store.Store
	// Known reports whether the journal holds thread (a conversation begun
	// before a restart); nil: only live threads are known. When it is set
	// the journal decides for a received call whose done mark a crash
	// lost, so a call is acknowledged without waiting for that mark, and
	// its received and served rows ride with its journal commit instead of
	// forcing one: with Store set, Known must read the journal the pump
	// writes to that store (as an organism's does), so the rows, queued
	// first, are durable once the call's journal record is.
	Known func(thread string) (bool, error)
	// Meta answers the peers' meta questions (nil: refused).
	Meta MetaAnswerer
	// OnLink is told when a gateway's link comes up ("gateway-connected")
	// or goes down ("gateway-disconnected").
	OnLink func(event, gateway, detail string)
	// OnImport is told when a gateway's import becomes a listener after
	// Start (its link came up late), so agents whose peers name the
	// gateway can be given it.
	OnImport func(gateway, listener string)
	// Notify tells the caller on thread a line about its call to
	// listener (from), as the listener's printed line: that the peer the
	// call waits on cannot be reached, so the call waits for it or for
	// its call_timeout. The text names the peer organism only to a
	// caller confined to no profile. nil: callers are not told.
	Notify func(thread, from, text string)
	// Observer sees the envelopes, refusals and round trips of every
	// gateway (nil: none).
	Observer Observer
	// Traces continues the callers' traces in the conversations their
	// calls begin (nil: calls carry no trace across).
	Traces TraceJoiner
	// Backoff bounds the reconnect delays (defaults 200ms and 10s).
	BackoffBase, BackoffMax time.Duration
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Clock returns the current time (default time.Now).
	Clock func() time.Time
}

// Manager runs an organism's gateways.
type Manager struct {
	opts Options
	// drainLimit replaces the package's drainLimit when set (tests).
	drainLimit time.Duration
	log        *slog.Logger
	db         *db
	secret     []byte
	gateways   []*gateway
	byName     map[string]*gateway
	closed     chan struct{}
	once       sync.Once
	wg         sync.WaitGroup
	upgrader   websocket.Upgrader
	stats      linkStats
	// gmu guards gateways and byName (AddGateway, RemoveGateway).
	gmu     sync.RWMutex
	started atomic.Bool
	// startedCh is closed by Start: the peer's meta questions on a link
	// made before it (refreshOnce) wait for it, as the listeners they ask
	// about are all in place only then.
	startedCh chan struct{}
	// firstSwept is closed once the sweeper's first sweep, at Start, has
	// committed (a test counting its own commits waits for it).
	firstSwept chan struct{}
	startOnce  sync.Once
	// amu and stopping keep goroutines from starting once Stop began.
	amu      sync.RWMutex
	stopping bool
	// handshakes admits the inbound links still proving their identity.
	handshakes *handshakeGate
	// keep and stale are the received-hash retention and the age beyond
	// which an envelope is refused (retention).
	keep, stale time.Duration

	// cmu serialises Close; dbClosed is set once the state is closed.
	cmu      sync.Mutex
	dbClosed bool
	// beforeAnswer, when set (tests only, before any traffic), runs on the
	// event goroutine before the answer of served conversation conv is
	// queued: the moment its reply is durable and its entry not yet.
	beforeAnswer func(conv string)
	// beforeInject, when set (tests only, before any traffic), runs as a
	// received call for conversation conv is about to be injected.
	beforeInject func(conv string)
	// onAcked, when set (tests only, before any traffic), is told the
	// envelope of each of its entries the peer acknowledges, as it
	// arrives.
	onAcked func(env []byte)
	// frameHook, when set (tests only, before any traffic), is told every
	// text frame (acknowledgement or refusal) a peer sends, as it arrives.
	frameHook func(f frame)
	// handover is held for reading while an answer of a served
	// conversation is queued on its gateway (answerThrough), and for
	// writing while a gateway takes over the outbox of one of its name
	// (insert): an answer queued on a gateway a reload stopped is in the
	// state before its successor loads the outbox.
	handover sync.RWMutex
	// smu guards served: the conversations serving peers' calls.
	smu         sync.Mutex
	served      map[string]*served
	unsubscribe func()

	wmu         sync.Mutex
	watchers    map[int]func(event, gateway, detail string)
	nextWatcher int

	// messageSeq is pump.MessageSeq (tests name handlings of their own).
	messageSeq func(context.Context) (int64, bool)
	// afterJournal is pump.AfterJournalOr (tests run it when they choose).
	afterJournal func(ctx context.Context, fn, dropped func())
	// proxyHook, when set (tests only, before any traffic), is told as a
	// proxy handling of call lt, or the receipt of an answer to it,
	// reaches step at: it may hold it there.
	proxyHook func(at proxyStep, lt string)
	// registerHook, when set (tests only), runs as an imported listener
	// is in the pump but not yet recorded as registered (register).
	registerHook func(name string)
	// removeHook, when set (tests only), runs once a gateway's removal
	// ended its calls (endCalls), before its link and sender stop.
	removeHook func(*gateway)
	// workers, when set (tests only, before any import is registered),
	// replaces importWorkers.
	workers int
	// onRefresh, when set (tests only, before any traffic), is told the
	// outcome of each refresh of a gateway's imports on a live link.
	onRefresh func(gateway string, err error)
	// importPause, when set (tests only), replaces the first pause of
	// importWhileUp (firstImportPause).
	importPause time.Duration
	// onImportPause, when set (tests only, before any traffic), is told
	// each pause importWhileUp takes before asking the peer again.
	onImportPause func(gateway string, d time.Duration)
	// began is when the manager was made: for a while after, an answer to
	// a call nobody made in this life is kept (onAnswer).
	began time.Time
}

// handling is the journal seq of the message a handler handles (ctx) and
// whether it is re-delivered after a restart: 0 without a store, whose
// journal seqs name calls (openByID).
func (m *Manager) handling(ctx context.Context) (int64, bool) {
	if m.opts.Store == nil {
		return 0, false
	}
	return m.messageSeq(ctx)
}

// journaledAt is when the journal entry seq was journaled.
func (m *Manager) journaledAt(seq int64) (time.Time, bool) {
	es, err := m.opts.Store.After(seq-1, 1)
	if err != nil || len(es) != 1 || es[0].Seq != seq {
		return time.Time{}, false
	}
	return es[0].Time, true
}

// New loads every gateway's trusted identity and the federation state. A
// missing or unreadable trusted_identity is an error naming the gateway.
func New(o Options) (*Manager, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 200 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 10 * time.Second
	}
	if len(o.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("federation: no organism identity (run: xmlpipe keys init)")
	}
	if o.Pump == nil {
		return nil, errors.New("federation: no pump")
	}
	if o.Organism == "" {
		// A peer refuses a handshake naming no organism (ErrNameless).
		return nil, errors.New("federation: no organism name (organism.name)")
	}
	m := &Manager{opts: o, log: o.Logger, byName: map[string]*gateway{}, closed: make(chan struct{}), startedCh: make(chan struct{}),
		firstSwept: make(chan struct{}),
		served:     map[string]*served{}, handshakes: newHandshakeGate(MaxHandshakes, MaxHandshakesPerSource),
		upgrader:   websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10},
		messageSeq: pump.MessageSeq, afterJournal: pump.AfterJournalOr, began: o.Clock()}
	s := sha256.Sum256(append([]byte("xmlpipe-federation-secret\x00"), o.Key.Seed()...))
	m.secret = s[:]
	for _, gc := range o.Gateways {
		g, err := m.newGateway(gc)
		if err != nil {
			return nil, err
		}
		for _, o := range m.gateways {
			if subtle.ConstantTimeCompare(o.peerKey(), g.peerKey()) == 1 {
				// Each would take the peer's links from the other, for ever.
				return nil, fmt.Errorf("%w: gateways %s and %s trust the same key (%s): one gateway per peer",
					ErrGatewayExists, o.name, gc.Name, Fingerprint(g.peerKey()))
			}
		}
		m.gateways = append(m.gateways, g)
		m.byName[strings.ToLower(gc.Name)] = g
	}
	var err error
	if m.db, err = openDB(o.Store, o.Logger); err != nil {
		return nil, err
	}
	m.db.recent = newRecent(m.began)
	if err := m.db.recent.load(m.db); err != nil {
		return nil, errors.Join(err, m.db.close())
	}
	exports := false
	for _, g := range m.gateways {
		if err := g.load(); err != nil {
			return nil, errors.Join(err, m.db.close())
		}
		exports = exports || len(g.offer().exports) > 0
	}
	m.keep, m.stale = retention(m.longestCallTimeout())
	if err := m.loadServed(); err != nil {
		return nil, errors.Join(err, m.db.close())
	}
	if err := m.resendAnswers(); err != nil {
		return nil, errors.Join(err, m.db.close())
	}
	if exports {
		// Only what onEvent acts on: the other events need not wait for
		// (and hurry) the commits of what they are about.
		m.subscribeServed()
	}
	o.Pump.Threads().OnEnd(func(ids []string) {
		for _, g := range m.list() {
			g.threadsEnded(ids)
		}
	})
	return m, nil
}

// newGateway checks gc's trusted key and builds its gateway.
func (m *Manager) newGateway(gc config.Gateway) (*gateway, error) {
	pub := ed25519.PublicKey(gc.TrustedKey)
	if len(gc.TrustedKey) == 0 {
		var err error
		if pub, err = keys.ReadPublic(gc.TrustedIdentity); err != nil {
			return nil, fmt.Errorf("federation: gateway %s: trusted_identity %s: %w", gc.Name, gc.TrustedIdentity, err)
		}
	} else if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("federation: gateway %s: trusted key is %d bytes, want %d", gc.Name, len(pub), ed25519.PublicKeySize)
	}
	if subtle.ConstantTimeCompare(pub, m.opts.Key.Public().(ed25519.PublicKey)) == 1 {
		return nil, fmt.Errorf("federation: gateway %s: trusted_identity is this organism's own key", gc.Name)
	}
	return newGateway(m, gc, pub), nil
}

// TrustedKey is the identity gateway name trusts now (false: no such
// gateway).
func (m *Manager) TrustedKey(name string) (ed25519.PublicKey, bool) {
	m.gmu.RLock()
	g := m.byName[strings.ToLower(name)]
	m.gmu.RUnlock()
	if g == nil {
		return nil, false
	}
	return g.peerKey(), true
}

// list is a snapshot of the gateways.
func (m *Manager) list() []*gateway {
	m.gmu.RLock()
	defer m.gmu.RUnlock()
	return m.gateways
}

// ErrGatewayExists: a gateway of that name (or reaching that peer) runs
// already.
var ErrGatewayExists = errors.New("federation: gateway exists")

// ErrNoGateway: no gateway of that name runs.
var ErrNoGateway = errors.New("federation: no such gateway")

// AddGateway runs one more gateway while the organism runs (the OOB
// channel's register-remote-gateway): it may only import — calls from the
// peer need an export, which organism.yaml declares. Its imports become
// listeners once its link is up.
func (m *Manager) AddGateway(gc config.Gateway) error {
	if len(gc.Export) > 0 {
		return fmt.Errorf("federation: gateway %s: a gateway added while running cannot export (declare it in organism.yaml)", gc.Name)
	}
	g, err := m.newGateway(gc)
	if err != nil {
		return err
	}
	m.gmu.Lock()
	for _, o := range m.gateways {
		switch {
		case strings.EqualFold(o.name, gc.Name):
			err = fmt.Errorf("%w: %s", ErrGatewayExists, gc.Name)
		case subtle.ConstantTimeCompare(o.peerKey(), g.peerKey()) == 1:
			err = fmt.Errorf("%w: gateway %s trusts that key already", ErrGatewayExists, o.name)
		default:
			if i := slices.IndexFunc(gc.Import, func(tag string) bool { return slices.Contains(o.offer().imports, tag) }); i >= 0 {
				// Both would stand for one root tag: their listeners collide.
				err = fmt.Errorf("%w: gateway %s imports <%s> already: one gateway per imported tag",
					ErrGatewayExists, o.name, gc.Import[i])
			}
		}
	}
	if err == nil {
		if err = g.load(); err == nil {
			m.gateways = append(append([]*gateway(nil), m.gateways...), g)
			m.byName[strings.ToLower(gc.Name)] = g
		}
	}
	m.gmu.Unlock()
	if err != nil {
		return err
	}
	g.log.Info("federation: gateway added", "url", gc.RemoteURL, "import", gc.Import)
	if m.started.Load() {
		m.run(g)
	}
	return nil
}

// RemoveGateway stops the gateway called name: the calls waiting on the
// peer fail with ErrGatewayRemoved and are cancelled (the peer stops its
// side; the link stays up for the peer's acknowledgements, drainLimit at
// most), its link closes, its dialer and sender stop, and the listeners
// standing for its imports are removed (bounded by ctx). What waits in its
// outbox stays for a gateway of that name at a later start.
func (m *Manager) RemoveGateway(ctx context.Context, name string) error {
	m.gmu.Lock()
	g := m.byName[strings.ToLower(name)]
	if g != nil {
		delete(m.byName, strings.ToLower(name))
		m.gateways = slices.DeleteFunc(append([]*gateway(nil), m.gateways...), func(o *gateway) bool { return o == g })
	}
	m.gmu.Unlock()
	if g == nil {
		return fmt.Errorf("%w: %s", ErrNoGateway, name)
	}
	g.endCalls(ctx)
	if m.removeHook != nil {
		m.removeHook(g)
	}
	g.stopOnce.Do(func() { close(g.stopped) })
	g.mu.Lock()
	c := g.conn
	names := make([]string, 0, len(g.registered))
	for n := range g.registered {
		names = append(names, n)
	}
	g.mu.Unlock()
	if c != nil {
		c.close(closingRemoved)
	}
	var errs []error
	for _, n := range names {
		if err := m.opts.Pump.RemoveListener(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	g.log.Info("federation: gateway removed")
	return errors.Join(errs...)
}

// endCalls fails the calls waiting on g's peer (their handlers cancel
// them) and waits, for drainLimit at most and within ctx, until the
// handlers stopped waiting and the peer acknowledged what was written on
// the link, cancels included: a call whose wait outlived its gateway held
// its conversation (and the removal of its listener) until call_timeout,
// and the peer ran it for nobody.
func (g *gateway) endCalls(ctx context.Context) {
	g.mu.Lock() // a call is opened under it (proxy): either it sees the removal or the removal waits for it
	g.removeOnce.Do(func() { close(g.removing) })
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, drainLimit)
	defer cancel()
	if !g.awaitWaiting(ctx.Done()) {
		g.log.Warn("federation: gateway removed while calls still wait on the peer", "limit", drainLimit)
	}
	g.mu.Lock()
	c := g.conn
	g.mu.Unlock()
	if c != nil {
		g.awaitAcks(c, true, ctx.Done())
	}
}

// run starts g's sender and, with a remote_url, its dialer (not once
// Stop has begun).
func (m *Manager) run(g *gateway) {
	if !m.acquire() {
		return
	}
	go g.sender()
	g.wake()
	if g.remoteURL() != "" && m.acquire() {
		go g.dialLoop()
	}
}

// acquire counts one more goroutine of the manager (m.wg) unless Stop has
// begun: Close's wait must not race a late start.
func (m *Manager) acquire() bool {
	m.amu.RLock()
	defer m.amu.RUnlock()
	if m.stopping {
		return false
	}
	m.wg.Add(1)
	return true
}

// Prepare registers the imported capabilities before the pump starts, so
// agents see them in their usage instructions: those remembered from an
// earlier link, refreshed from the peer when it can be reached within
// wait. An import that cannot be had yet is added later, when its link
// comes up. The link that fetched them stays, though some could not be
// had: those the peer exports in a way no import can take (only in a
// namespace, or with a payload no local listener stands for) are logged
// once and not asked for again on it. It returns what else could not be
// imported (the organism runs on).
func (m *Manager) Prepare(ctx context.Context, wait time.Duration) error {
	var errs []error
	for _, g := range m.list() {
		if len(g.offer().imports) == 0 {
			continue
		}
		list, err := m.db.loadImports(g.name)
		if err != nil {
			errs = append(errs, err)
		}
		// An earlier version remembered imports no listener can stand for
		// too: they are no import "not available yet", and a link tells
		// of them as it learns the peer's contract.
		list, why := g.importable(list)
		if len(why) > 0 {
			g.log.Info("federation: remembered imports that cannot stand for a local listener are forgotten",
				"error", errors.Join(why...))
		}
		if g.remoteURL() == "" || wait <= 0 {
			if err := g.register(list); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		c, fresh, qualified, err := g.refreshOnce(ctx, wait)
		if c == nil {
			g.log.Warn("federation: imports not fetched at start; asked again once the link is up", "error", err)
			if err := g.register(list); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if rerr := g.register(fresh); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if err == nil {
			continue
		}
		// What the peer will answer the same until it restarts (a new
		// link) is told once, here, and not asked for again on this link.
		c.unimportable = qualified + g.unimportable(fresh)
		if g.missingImports() == c.unimportable {
			g.log.Error("federation: an import's payload cannot stand for a local listener; the next link asks again",
				"error", err)
			continue
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Start runs the gateways: their senders and, for those with remote_url,
// their dialers.
func (m *Manager) Start() {
	m.started.Store(true)
	m.startOnce.Do(func() { close(m.startedCh) })
	for _, g := range m.list() {
		m.run(g)
	}
	if m.acquire() {
		go m.sweeper()
	}
}

// Stop ends every link and stops the gateways: calls waiting on a peer
// return an error wrapping ErrClosed and pump.ErrStopping (their records
// stay, and the pump leaves their journaled messages for the next start). The links
// drain first, for drainLimit at most: they take no more envelopes, and
// close once the envelopes they took are acknowledged or refused (so the
// peer resends none this side processed) and the peer acknowledged or
// refused those written to it (so the next start resends none the peer
// processed); the pump must still run
// meanwhile, as the acknowledgements of calls wait for their journal
// records. What is sent after Stop — the answers of conversations still
// draining — waits in the outbox for the next start. Close must follow.
func (m *Manager) Stop() { m.StopContext(context.Background()) }

// StopContext is Stop with the links' drain also ending when ctx does: a
// shutdown's deadline bounds it, and an ended ctx closes the links at once
// (their peers resend what this side had not acknowledged).
func (m *Manager) StopContext(ctx context.Context) {
	m.once.Do(func() {
		m.amu.Lock()
		m.stopping = true
		m.amu.Unlock()
		close(m.closed)
		ctx, cancel := context.WithTimeout(ctx, m.drainFor())
		defer cancel()
		var wg sync.WaitGroup
		for _, g := range m.list() {
			g.mu.Lock()
			c := g.conn
			g.mu.Unlock()
			if c != nil {
				wg.Go(func() { c.drain(ctx) })
			}
		}
		wg.Wait()
	})
}

// drainFor bounds a stop's drain of the links.
func (m *Manager) drainFor() time.Duration {
	if m.drainLimit > 0 {
		return m.drainLimit
	}
	return drainLimit
}

// Close stops the gateways (Stop) and closes the federation state; call it
// once the pump has stopped. Outbox entries stay for the next start.
func (m *Manager) Close() error {
	m.Stop()
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if m.unsubscribe != nil {
		m.unsubscribe()
		m.unsubscribe = nil
	}
	m.wg.Wait()
	if m.dbClosed {
		return nil
	}
	m.dbClosed = true
	return m.db.close()
}

// Handler serves the federation endpoint (Path): a peer's inbound link.
func (m *Manager) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-m.closed:
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		default:
		}
		if !m.acquire() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		defer m.wg.Done()
		adm, cut, err := m.handshakes.admit(r.RemoteAddr)
		if cut > 0 {
			m.log.Debug("federation: cut off an idle handshake to admit a newer one", "remote", r.RemoteAddr, "cut", cut)
			for range cut {
				m.refusal(UnknownGateway, RefusedHandshake) // cut before it said who it is
			}
		}
		if err != nil {
			// Unauthenticated connections are bounded (handshakeGate): a
			// flood of idle handshakes cannot hold the organism's memory
			// or sockets, nor every slot.
			m.log.Warn("federation: security: inbound link refused: "+err.Error(), "remote", r.RemoteAddr)
			m.refusal(UnknownGateway, RefusedHandshake)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer adm.done()
		ws, err := m.upgrader.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader answered
		}
		if !adm.upgraded(ws.NetConn()) {
			_ = ws.Close()
			return
		}
		g, p, claimed, err := acceptHandshake(ws, m.opts.Key, m.opts.Organism, m.trust, r.TLS, adm.saidHello, m.now)
		if err != nil {
			if adm.wasCut() {
				_ = ws.Close()
				return
			}
			label := m.refusedAs(g, claimed)
			if g == nil && errors.Is(err, ErrUntrusted) {
				err = fmt.Errorf("%w; %s", err, m.rotatedHint(claimed))
			}
			m.log.Warn("federation: security: inbound link refused", "remote", r.RemoteAddr, "gateway", label, "error", err)
			m.refusal(label, RefusedHandshake)
			_ = ws.Close()
			return
		}
		adm.done()
		g.attach(ws, p, false)
	})
}

// refusedAs is the gateway label of a refused inbound handshake: g's name
// when the dialer's key is g's, else the configured gateway named like the
// organism the dialer claimed (its identity rotated, say), else
// UnknownGateway — a configured name, never the claim itself, so an
// unauthenticated dialer cannot grow the metric's label set.
func (m *Manager) refusedAs(g *gateway, claimed string) string {
	if g != nil {
		return g.name
	}
	if claimed != "" {
		m.gmu.RLock()
		o := m.byName[strings.ToLower(claimed)]
		m.gmu.RUnlock()
		if o != nil {
			return o.name
		}
	}
	return UnknownGateway
}

// rotatedHint tells the operator of an inbound link refused for its key
// which gateway it may be the peer of, its identity rotated: the gateway
// named like the organism the dialer claimed, else those with no live
// link — each with the key it trusts and what to replace.
func (m *Manager) rotatedHint(claimed string) string {
	var candidates []*gateway
	m.gmu.RLock()
	named := m.byName[strings.ToLower(claimed)]
	m.gmu.RUnlock()
	if named != nil && claimed != "" {
		candidates = []*gateway{named}
	} else {
		for _, g := range m.list() {
			g.mu.Lock()
			down := g.conn == nil
			g.mu.Unlock()
			if down {
				candidates = append(candidates, g)
			}
		}
	}
	if len(candidates) == 0 {
		return "every gateway's peer is linked: not a peer's rotated identity"
	}
	var b strings.Builder
	b.WriteString("if it is the peer of ")
	for i, g := range candidates {
		if i > 0 {
			b.WriteString(" or of ")
		}
		t := g.target.Load()
		if t.registered {
			fmt.Fprintf(&b, "gateway %s (which trusts %s; registered over OOB: register it again with the new identity)",
				g.name, Fingerprint(t.trusted))
		} else {
			fmt.Fprintf(&b, "gateway %s (which trusts %s: put the new `xmlpipe keys export` file at %s)",
				g.name, Fingerprint(t.trusted), t.identity)
		}
	}
	b.WriteString(" with its identity rotated, then reload (ctl reload) or restart this organism")
	return b.String()
}

// trust returns the gateway whose trusted identity is k.
func (m *Manager) trust(k ed25519.PublicKey) *gateway {
	for _, g := range m.list() {
		if subtle.ConstantTimeCompare(g.peerKey(), k) == 1 {
			return g
		}
	}
	return nil
}

// attach serves an authenticated link until it ends; a newer link of the
// same gateway replaces an older one. dialed says this side dialed it.
func (g *gateway) attach(ws *websocket.Conn, p peer, dialed bool) {
	c := newConn(g, ws, p, false, dialed)
	g.mu.Lock()
	// Checked under g.mu: Stop and RemoveGateway signal first, then close
	// the link they find under it, so a link made meanwhile is either
	// found there or refused here.
	// A link closed here is closed as one that ran: the peer is told why
	// (its status reads "it is stopping", not an abnormal closure).
	select {
	case <-g.stopped: // removed while the link was being made
		g.mu.Unlock()
		c.close(closingRemoved)
		return
	case <-g.m.closed: // stopped while the link was being made
		g.mu.Unlock()
		c.close(fmt.Errorf("%w: %w", ErrClosed, closingStop))
		return
	default:
	}
	old := g.conn
	g.conn = c
	g.gen++
	g.mu.Unlock()
	if old != nil {
		old.close(closingReplaced)
	}
	g.serveLink(c, c.run)
}

// serveLink announces the link c, asks the peer for the imports still
// missing (the peer's calls wait for the first attempt), and waits for the
// link to end (serve: run it, or wait for its runner).
func (g *gateway) serveLink(c *conn, serve func() error) {
	now := g.m.now()
	g.down.clear(now)
	if was, downFor, attempts, queued := g.reach.ended(now); was {
		g.log.Info("federation: the peer is reachable again", "down_for", downFor.Round(time.Second),
			"failed_dials", attempts, "calls_queued", queued)
	}
	g.log.Info("federation: gateway connected", "peer", c.peer.organism, "key", Fingerprint(c.peer.key), "queued", g.queued())
	g.warnClock(c.peer)
	g.m.event("gateway-connected", g.name, c.peer.organism)
	g.wake()
	if len(g.offer().imports) > 0 && g.m.acquire() {
		go func() {
			defer g.m.wg.Done()
			g.importWhileUp(c)
		}()
	} else {
		c.markReady()
	}
	err := serve()
	g.mu.Lock()
	if g.conn == c {
		g.conn = nil
	}
	g.mu.Unlock()
	g.down.set(err, g.m.now())
	g.log.Info("federation: gateway disconnected", "error", err)
	g.m.event("gateway-disconnected", g.name, fmt.Sprint(err))
}

// dial opens one link to the peer and runs the handshake; why it failed is
// kept for Status.
func (g *gateway) dial(ctx context.Context) (*websocket.Conn, peer, error) {
	g.down.dial()
	ws, p, err := g.dialOnce(ctx)
	g.down.set(err, g.m.now())
	if err == nil {
		g.down.clear(g.m.now())
	}
	return ws, p, err
}

// dialOnce opens one link to the peer and runs the handshake.
func (g *gateway) dialOnce(ctx context.Context) (*websocket.Conn, peer, error) {
	u, err := url.Parse(g.remoteURL())
	if err != nil {
		return nil, peer{}, err
	}
	u.Path = Path
	d := websocket.Dialer{HandshakeTimeout: handshakeTimeout, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10,
		// The peer is authenticated by its Ed25519 identity, bound to
		// this TLS session (handshake.go), not by its certificate.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}} //nolint:gosec
	ws, _, err := d.DialContext(ctx, u.String(), nil)
	if err != nil {
		return nil, peer{}, silentPeer(ctx, err)
	}
	var cs *tls.ConnectionState
	if tc, ok := ws.NetConn().(*tls.Conn); ok {
		s := tc.ConnectionState()
		cs = &s
	}
	p, err := dialHandshake(ws, g.m.opts.Key, g.m.opts.Organism, g.peerKey(), cs, g.m.now)
	if err != nil {
		_ = ws.Close()
		if refusedHandshake(err) {
			// Counted as an inbound refusal is on the peer: else this
			// side's metrics tell a refused link from a peer that is down
			// by nothing.
			g.m.refusal(g.name, RefusedHandshake)
			err = g.explainHandshake(err)
		}
		return nil, peer{}, silentPeer(ctx, err)
	}
	return ws, p, nil
}

// silentPeer explains err, a dial's, when it is the handshake's bound
// running out rather than ctx's end: the peer did not answer in time,
// which a bare "context deadline exceeded" or "i/o timeout" does not tell
// apart from this side giving up.
func silentPeer(ctx context.Context, err error) error {
	var ne net.Error
	if ctx.Err() != nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		return err
	}
	return fmt.Errorf("the peer did not answer within %s (a hung or overloaded organism, or a firewall "+
		"dropping its packets): %w", handshakeTimeout, err)
}

// refreshOnce dials the peer (bounded by wait) to fetch the imports before
// the pump starts, and keeps that link for the dialer loop to adopt
// (g.prepared) rather than handshaking again at Start: a meta question the
// peer asks on it is answered on the link that stays. Until Start the
// peer's calls wait (the link is not ready) and nothing is sent from the
// outbox (the sender is not running). It returns the link kept, the
// imports fetched and how many imported tags the peer exports only
// qualified (fetchImports); err tells why the others were not fetched. A
// link on which the peer told nothing of its exports is closed (c nil);
// one that told of some stays, though others could not be fetched.
func (g *gateway) refreshOnce(ctx context.Context, wait time.Duration) (c *conn, list []imported, qualified int, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ws, p, err := g.dial(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	if !g.m.acquire() {
		_ = ws.Close()
		return nil, nil, 0, ErrClosed
	}
	c = newConn(g, ws, p, true, true)
	g.mu.Lock()
	old := g.prepared
	g.conn, g.prepared = c, c
	g.gen++
	g.mu.Unlock()
	if old != nil { // a second Prepare: the newer link stays
		old.close(closingReplaced)
	}
	go func() {
		defer g.m.wg.Done()
		err := c.run()
		g.mu.Lock()
		if g.conn == c {
			g.conn = nil
		}
		g.mu.Unlock()
		close(c.served)
		if !g.m.started.Load() {
			g.log.Debug("federation: the link made at start ended before the start", "error", err)
		}
	}()
	list, gone, qualified, _, err := g.fetchImports(ctx)
	told := len(list)+len(gone) > 0 // the peer answered for some imported tag
	if told {
		// Only what can be registered is remembered: the next start, the
		// peer unreachable, registers it and has nothing to warn of.
		keep, _ := g.importable(list)
		if serr := g.m.db.saveImports(ctx, g.name, keep); serr != nil {
			err, told = errors.Join(err, serr), false
		}
	}
	if !told {
		if err == nil { // the peer answered for no imported tag: unexpected
			err = fmt.Errorf("%w: gateway %s: the peer told nothing of the imported tags", ErrMeta, g.name)
		}
		c.close(fmt.Errorf("import fetch failed: %w", err))
		<-c.served
		g.mu.Lock()
		if g.prepared == c {
			g.prepared = nil
		}
		g.mu.Unlock()
		return nil, nil, 0, err
	}
	c.importsFetched = true
	return c, list, qualified, err
}

// adoptPrepared serves the link refreshOnce kept, if it is still up, as
// attach serves a new one, and reports whether there was one to serve.
func (g *gateway) adoptPrepared() bool {
	g.mu.Lock()
	c := g.prepared
	g.prepared = nil
	g.mu.Unlock()
	if c == nil {
		return false
	}
	select {
	case <-c.done:
		<-c.served
		return false
	default:
	}
	g.serveLink(c, func() error {
		<-c.served
		return c.err
	})
	return true
}

// dialAndAttach dials the peer and serves the link until it ends; a link
// that stayed up a while resets *delay to the base backoff.
func (g *gateway) dialAndAttach(delay *time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-g.m.closed:
			cancel()
		case <-g.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	ws, p, err := g.dial(ctx)
	cancel()
	if err != nil {
		g.logUnreachable(err, *delay)
		return
	}
	start := time.Now()
	g.attach(ws, p, true)
	if time.Since(start) > 2*g.m.opts.BackoffMax {
		*delay = g.m.opts.BackoffBase
	}
}

// logUnreachable logs a failed dial of the peer: a WARN as the peer
// becomes unreachable, then reminders less and less often (outage),
// DEBUG between them — not a WARN every backoff.
func (g *gateway) logUnreachable(err error, retry time.Duration) {
	_, since, _ := g.down.get(false)
	what, downFor, attempts := g.reach.failed(g.m.now(), since)
	switch what {
	case outageBegan:
		g.log.Warn("federation: cannot reach the peer; calls to it wait in the outbox until it is back or their call_timeout "+
			"(reminders follow less and less often)", "url", g.remoteURL(), "error", err, "retry_in", retry)
	case outageReminder:
		g.log.Warn("federation: cannot reach the peer, still", "url", g.remoteURL(), "error", err,
			"down_for", downFor.Round(time.Second), "failed_dials", attempts, "queued", g.queued())
	default:
		g.log.Debug("federation: cannot reach the peer", "url", g.remoteURL(), "error", err, "retry_in", retry,
			"down_for", downFor.Round(time.Second))
	}
}

// dialLoop keeps the gateway's link up: it serves the link made at start
// (refreshOnce) while it lasts, else dials, serves the link until it
// ends, and dials again after an exponential backoff with ±25 % jitter
// (reset once a link has stayed up a while).
func (g *gateway) dialLoop() {
	defer g.m.wg.Done()
	delay := g.m.opts.BackoffBase
	for {
		select {
		case <-g.m.closed:
			return
		case <-g.stopped:
			return
		default:
		}
		if !g.adoptPrepared() {
			g.dialAndAttach(&delay)
		}
		jitter := 0.75 + rand.Float64()/2 //nolint:gosec // jitter, not a secret
		t := time.NewTimer(time.Duration(float64(delay) * jitter))
		select {
		case <-g.m.closed:
			t.Stop()
			return
		case <-g.stopped:
			t.Stop()
			return
		case <-g.redial: // relinked elsewhere: dial the new address now
			t.Stop()
			delay = g.m.opts.BackoffBase
			continue
		case <-t.C:
		}
		delay = min(delay*2, g.m.opts.BackoffMax)
	}
}

// known reports whether conversation conv was journaled (with no journal
// to ask, Options.Known nil: whether it is live).
func (m *Manager) known(conv string) bool {
	if m.opts.Known == nil {
		_, ok := m.opts.Pump.Threads().Origin(conv)
		return ok
	}
	// The journal alone decides: after a crash the thread registry may
	// restore conv live (its thread's write committed before the call's
	// journal record did) although the call was never journaled.
	seen, err := m.opts.Known(conv)
	if err != nil {
		m.log.Error("federation: journal lookup failed; the call is taken as new", "thread", conv, "error", err)
	}
	return seen
}

func (m *Manager) event(kind, gw, detail string) {
	if m.opts.OnLink != nil {
		m.opts.OnLink(kind, gw, detail)
	}
	m.wmu.Lock()
	ws := make([]func(string, string, string), 0, len(m.watchers))
	for _, w := range m.watchers {
		ws = append(ws, w)
	}
	m.wmu.Unlock()
	for _, w := range ws {
		w(kind, gw, detail)
	}
}

// Watch calls fn on every link event ("gateway-connected",
// "gateway-disconnected") from now on, until cancel is called.
func (m *Manager) Watch(fn func(event, gateway, detail string)) (cancel func()) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.watchers == nil {
		m.watchers = map[int]func(string, string, string){}
	}
	id := m.nextWatcher
	m.nextWatcher++
	m.watchers[id] = fn
	return func() {
		m.wmu.Lock()
		defer m.wmu.Unlock()
		delete(m.watchers, id)
	}
}

func (m *Manager) now() time.Time { return m.opts.Clock() }

// sweeper drops old received-envelope hashes hourly.
func (m *Manager) sweeper() {
	defer m.wg.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	first := true
	for {
		if err := m.db.sweep(m.now(), m.keep, m.callsRetention()); err != nil {
			m.log.Warn("federation: sweep", "error", err)
		}
		if first {
			close(m.firstSwept)
			first = false
		}
		select {
		case <-m.closed:
			return
		case <-t.C:
		}
	}
}

// fastImportAttempts is how many times a link asks for the imported tags
// the peer does not export (ErrNotExported), pausing from importPause and
// doubling, before it tells so once and asks only every quietImportPause:
// a listener the peer is still registering at its start arrives within
// seconds, while a typo in import: is told once, by name and with what the
// peer does export, not warned of every 30 s for ever.
const fastImportAttempts = 5

// quietImportPause is how long a link waits between asking again for
// imported tags the peer does not export, once fastImportAttempts are
// spent. A peer restarted with other exports is asked at once anyway (its
// new link asks again).
const quietImportPause = 10 * time.Minute

// firstImportPause is the first pause of importWhileUp: one second, unless
// a test set importPause.
func (m *Manager) firstImportPause() time.Duration {
	if m.importPause > 0 {
		return m.importPause
	}
	return time.Second
}

// importWhileUp refreshes the imports from the peer on the live link c
// (refreshImports: the peer may have restarted with other exports), and
// asks again with a growing pause while some are missing (the peer may
// still be registering the listeners behind them) until all are there or
// c ends; for tags the peer does not export at all it asks
// fastImportAttempts times, then says so once and asks only every
// quietImportPause. A link whose imports were fetched as it was made
// (refreshOnce) is not asked again unless some are missing that asking
// again may bring (not those the fetch found unimportable:
// c.unimportable).
func (g *gateway) importWhileUp(c *conn) {
	pause := g.m.firstImportPause()
	defer c.markReady()
	if c.importsFetched && g.missingImports() <= c.unimportable {
		return // fetched as the link was made; what is missing, told then
	}
	if g.missingImports() == 0 {
		// The peer's calls wait for nothing: every import has a listener.
		c.markReady()
	}
	told := "" // the absent tags told of on this link
	for attempt := 1; ; attempt++ {
		list, gone, qualified, absent, err := g.fetchImports(context.Background())
		if rerr := g.refreshImports(context.Background(), list, gone); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if g.m.onRefresh != nil {
			g.m.onRefresh(g.name, err)
		}
		missing := g.missingImports()
		if missing == 0 {
			if err != nil {
				g.log.Warn("federation: imports not refreshed; the next link asks again", "error", err)
			}
			return
		}
		settled := g.unimportable(list) + qualified
		if missing == settled {
			// Asking again gets the same contract until the peer
			// changes it, which only a restart (a new link) does.
			g.log.Error("federation: an import's payload cannot stand for a local listener; the next link asks again",
				"error", err)
			return
		}
		c.markReady() // the peer's calls wait for the first attempt only
		wait := pause
		switch onlyAbsent := missing == settled+len(absent); {
		case onlyAbsent && attempt >= fastImportAttempts:
			wait = quietImportPause
			if key := strings.Join(absent, " "); key != told {
				told = key
				g.log.Warn("federation: the peer does not export an imported tag (a typo in import:?); asking again every "+
					quietImportPause.String()+" and on the next link", "tags", absent, "error", err)
			} else {
				g.log.Debug("federation: the peer still does not export an imported tag", "tags", absent, "in", wait)
			}
		case onlyAbsent:
			g.log.Debug("federation: the peer does not export an imported tag yet; asking again", "tags", absent,
				"in", wait)
		default:
			g.log.Warn("federation: imports not available yet; asking the peer again", "in", wait, "error", err)
		}
		if g.m.onImportPause != nil {
			g.m.onImportPause(g.name, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-c.done:
			t.Stop()
			return
		case <-g.m.closed:
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// unimportable is how many of list, not registered, have a payload no
// local listener can stand for (fields.ErrContract: a nested element, an
// attribute): asking the peer again cannot change that.
func (g *gateway) unimportable(list []imported) int {
	n := 0
	for _, im := range list {
		if g.isRegistered(im.Name) {
			continue
		}
		if _, err := g.listenerFor(im); errors.Is(err, fields.ErrContract) {
			n++
		}
	}
	return n
}

// missingImports is how many imported tags have no listener yet.
func (g *gateway) missingImports() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, tag := range g.offer().imports {
		found := false
		for _, im := range g.registered {
			if im.Tag == tag {
				found = true
				break
			}
		}
		if !found {
			n++
		}
	}
	return n
}

// callsRetention is how long a call or served record waits: twice the
// longest call_timeout, and at least a day (a conversation may run long).
func (m *Manager) callsRetention() time.Duration {
	return max(24*time.Hour, 2*m.longestCallTimeout())
}

// longestCallTimeout is the longest call_timeout of the gateways.
func (m *Manager) longestCallTimeout() time.Duration {
	d := config.DefaultGatewayCallTimeout
	for _, g := range m.list() {
		d = max(d, g.callTimeout())
	}
	return d
}
