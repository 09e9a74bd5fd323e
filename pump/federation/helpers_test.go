package federation

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Echo is the payload of the test peer's exported capability.
type Echo struct {
	Text string
}

// Echoed is its answer.
type Echoed struct {
	Text string
}

// logBuffer is a concurrency-safe log sink the tests read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writePublic writes k's public identity file, as xmlpipe keys export does.
func writePublic(t testing.TB, k ed25519.PrivateKey) string {
	t.Helper()
	b, err := keys.MarshalPublic(k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "peer.pub")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// callee is an organism side that exports Echo through gateway "a": its
// pump, its federation manager served over real TLS, and what its echo
// listener saw.
type callee struct {
	key   ed25519.PrivateKey
	pump  *pump.Pump
	m     *Manager
	st    *store.Store // nil: the state is in memory
	srv   *httptest.Server
	logs  *logBuffer
	mu    sync.Mutex
	calls []string
	// hold, when set, keeps every echo waiting until it is closed.
	hold chan struct{}
	// entered, when set (before any call), is told the text of every
	// echo as it begins.
	entered chan string
}

// Texts the callee's echo does not echo: it answers nothing (the
// conversation ends) or fails (a huh).
const (
	echoSilent = "silent"
	echoFail   = "fail"
	// echoDelegateFail: the echo passes the text on to the breaker, whose
	// failure the echo does not hear (no error handler): a dead letter.
	echoDelegateFail = "delegate-fail"
)

// Broken is what the callee's breaker takes: it fails on every one.
type Broken struct {
	Text string
}

func (c *callee) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// newCallee starts a callee trusting peerKey as gateway "a".
func newCallee(t testing.TB, peerKey ed25519.PrivateKey) *callee {
	return newCalleeHolding(t, peerKey, nil)
}

// newCalleeHolding is newCallee whose echo waits for hold to close.
func newCalleeHolding(t testing.TB, peerKey ed25519.PrivateKey, hold chan struct{}) *callee {
	t.Helper()
	return newCalleeIn(t, peerKey, newKey(t), "", hold)
}

// newCalleeIn is newCalleeHolding with the callee's key and its state in
// dir ("": in memory).
func newCalleeIn(t testing.TB, peerKey, key ed25519.PrivateKey, dir string, hold chan struct{}) *callee {
	t.Helper()
	return newCalleeWith(t, peerKey, key, dir, hold, nil)
}

// newCalleeWith is newCalleeIn whose pump journals into the store of dir
// (opened with so), as an organism's does, when so is not nil: the pump
// waits for the journal's commits, and the manager asks it about calls
// (Options.Known).
func newCalleeWith(t testing.TB, peerKey, key ed25519.PrivateKey, dir string, hold chan struct{}, so *store.Options) *callee {
	t.Helper()
	return newCalleeEdited(t, peerKey, key, dir, hold, so, nil)
}

// newCalleeEdited is newCalleeWith whose manager's options edit (when not
// nil) changes before the manager is made: where a test sets its
// observer.
func newCalleeEdited(t testing.TB, peerKey, key ed25519.PrivateKey, dir string, hold chan struct{}, so *store.Options,
	edit func(*Options)) *callee {
	t.Helper()
	return newCalleePumped(t, peerKey, key, dir, hold, so, edit, nil)
}

// newCalleePumped is newCalleeEdited whose pump's options editPump (when
// not nil) changes before the pump is made.
func newCalleePumped(t testing.TB, peerKey, key ed25519.PrivateKey, dir string, hold chan struct{}, so *store.Options,
	edit func(*Options), editPump func(*pump.Options)) *callee {
	t.Helper()
	c := &callee{key: key, logs: &logBuffer{}, hold: hold}
	log := slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	po := pump.Options{Organism: "b", Logger: log}
	if editPump != nil {
		editPump(&po)
	}
	var known func(string) (bool, error)
	if so != nil {
		so.Logger = log
		st, err := store.Open(dir, *so)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeStore(t, st) })
		c.st = st
		po.Journal = testJournal{st}
		known = func(thread string) (bool, error) {
			es, err := st.Thread(thread)
			return len(es) > 0, err
		}
	}
	p, err := pump.New(po)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := xmlpipe.PayloadTypeOf[Echo]()
	if err != nil {
		t.Fatal(err)
	}
	err = p.Register(pump.Listener{Name: "echo", Description: "echoes", Payload: pt,
		Handler: xmlpipe.Typed(func(_ context.Context, e *Echo, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			c.mu.Lock()
			c.calls = append(c.calls, md.From+":"+e.Text)
			entered := c.entered
			c.mu.Unlock()
			if entered != nil {
				entered <- e.Text
			}
			if c.hold != nil {
				<-c.hold
			}
			switch e.Text {
			case echoSilent: // the conversation ends without an answer
				return nil, nil
			case echoFail:
				return nil, errors.New("echo: told to fail")
			case echoDelegateFail:
				return xmlpipe.Send("breaker", &Broken{Text: e.Text}), nil
			}
			return xmlpipe.Respond(&Echoed{Text: strings.ToUpper(e.Text)}), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	bt, err := xmlpipe.PayloadTypeOf[Broken]()
	if err != nil {
		t.Fatal(err)
	}
	err = p.Register(pump.Listener{Name: "breaker", Description: "fails", Payload: bt,
		Handler: xmlpipe.Typed(func(context.Context, *Broken, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, errors.New("breaker: broke")
		})})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	c.pump = p
	if c.st == nil {
		c.st = openStore(t, dir, log)
	}
	mo := Options{Organism: "b", Key: c.key, Pump: p, Logger: log, Store: c.st, Known: known,
		Gateways: []config.Gateway{{Name: "a", TrustedIdentity: writePublic(t, peerKey), Export: []string{"Echo"}}}}
	if edit != nil {
		edit(&mo)
	}
	c.m, err = New(mo)
	if err != nil {
		t.Fatal(err)
	}
	c.m.Start()
	c.srv = httptest.NewUnstartedServer(c.m.Handler())
	// The bus's own kind of certificate (ECDSA P-256, self-signed), not
	// httptest's RSA one: what a handshake costs the server matters to
	// the flood tests.
	cert, err := certs.SelfSigned(t.TempDir(), []string{"127.0.0.1", "localhost"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	c.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	c.srv.StartTLS()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("callee log:\n%s", c.logs.String())
		}
		c.srv.Close()
		if err := c.m.Close(); err != nil {
			t.Error(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Shutdown(ctx)
		closeStore(t, c.st)
	})
	return c
}

// openStore opens the store of data directory dir, closed at the end of
// the test ("": none, nil).
func openStore(t testing.TB, dir string, log *slog.Logger) *store.Store {
	t.Helper()
	if dir == "" {
		return nil
	}
	st, err := store.Open(dir, store.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore(t, st) })
	return st
}

// closeStore closes st (nil: none; closed already: nothing to do).
func closeStore(t testing.TB, st *store.Store) {
	t.Helper()
	if st == nil {
		return
	}
	if err := st.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Error(err)
	}
}

// stopCallee stops c as the organism does at shutdown: its server, its
// manager, its pump, then its store (the directory can be opened again).
func stopCallee(t *testing.T, c *callee) {
	t.Helper()
	c.srv.Close()
	if err := c.m.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.pump.Shutdown(ctx)
	closeStore(t, c.st)
}

// url is the callee's bus address (wss://host:port).
func (c *callee) url() string { return "wss" + strings.TrimPrefix(c.srv.URL, "https") }

// rawPeer is a hand-driven peer: a websocket after the handshake.
type rawPeer struct {
	t   *testing.T
	key ed25519.PrivateKey
	ws  *websocket.Conn
}

// dialRaw connects to c with key, pinning c's identity; the handshake's
// error is returned.
func dialRaw(t *testing.T, c *callee, key ed25519.PrivateKey) (*rawPeer, error) {
	t.Helper()
	return dialRawAs(t, c, key, "a")
}

// dialRawAs is dialRaw saying hello as organism.
func dialRawAs(t *testing.T, c *callee, key ed25519.PrivateKey, organism string) (*rawPeer, error) {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // test
	ws, _, err := d.Dial(c.url()+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	s := ws.NetConn().(*tls.Conn).ConnectionState()
	if _, err := dialHandshake(ws, key, organism, c.key.Public().(ed25519.PublicKey), &s, time.Now); err != nil {
		return nil, err
	}
	return &rawPeer{t: t, key: key, ws: ws}, nil
}

// call builds a signed call envelope for payload.
func (r *rawPeer) call(to, payload string) []byte {
	r.t.Helper()
	return r.callSent(to, payload, time.Now())
}

// callSent is call with the envelope's sent time.
func (r *rawPeer) callSent(to, payload string, sent time.Time) []byte {
	r.t.Helper()
	return r.callOn(to, payload, stage.NewThreadID(), sent)
}

// callOn is callSent on link thread lt.
func (r *rawPeer) callOn(to, payload, lt string, sent time.Time) []byte {
	r.t.Helper()
	e := &envelope{From: "a", To: to, Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: sent},
		Payload: []byte(payload)}
	b, err := envsig.Sign(r.key, e.build())
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// send writes an envelope and returns the acknowledgement frame for it
// (skipping the peer's own envelopes, which it returns in answers).
func (r *rawPeer) send(env []byte) (ack frame, answers [][]byte) {
	r.t.Helper()
	if err := r.ws.WriteMessage(websocket.BinaryMessage, env); err != nil {
		r.t.Fatal(err)
	}
	_ = r.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		mt, b, err := r.ws.ReadMessage()
		if err != nil {
			r.t.Fatalf("no acknowledgement: %v", err)
		}
		if mt == websocket.BinaryMessage {
			answers = append(answers, b)
			continue
		}
		var f frame
		if err := jsonUnmarshal(b, &f); err != nil {
			r.t.Fatal(err)
		}
		return f, answers
	}
}

// next reads the next binary frame (an envelope from the peer).
func (r *rawPeer) next() []byte {
	r.t.Helper()
	_ = r.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		mt, b, err := r.ws.ReadMessage()
		if err != nil {
			r.t.Fatalf("no envelope: %v", err)
		}
		if mt == websocket.BinaryMessage {
			return b
		}
	}
}
