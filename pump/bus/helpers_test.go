package bus

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pquerna/otp/totp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth/authtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// waitTimeout bounds every wait on the server or the organism (a failsafe,
// never a pause).
const waitTimeout = 10 * time.Second

// password is every test user's password.
const password = "correct horse battery"

// t0 is the auth clock's start: 10 s into a TOTP step.
var t0 = time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)

// records is a slog handler keeping every record (security events).
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.list = append(r.list, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// find returns the first record whose message contains msg and that has
// the attribute key=value.
func (r *records) find(msg, key string, value any) (slog.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.list {
		if !strings.Contains(rec.Message, msg) {
			continue
		}
		found := false
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key && a.Value.Any() == value {
				found = true
				return false
			}
			return true
		})
		if found {
			return rec, true
		}
	}
	return slog.Record{}, false
}

// newLogger is a logger into r.
func newLogger(r *records) *slog.Logger { return slog.New(r) }

// fixture is a started durable hello-world organism, its auth service and a
// bus server on a loopback TLS listener.
type fixture struct {
	t       *testing.T
	local   *organism.Local
	org     *organism.Organism
	auth    *auth.Service
	clock   *authtest.Clock
	srv     *Server
	base    string // https://127.0.0.1:port
	wsBase  string // wss://127.0.0.1:port
	tls     *tls.Config
	logs    *records
	opts    Options
	serveCh chan error
	// beforeServe runs between New and Serve (test hooks).
	beforeServe func(*Server)
	// build assembles the organism, again on a restart (restartOrganism).
	build buildFunc
}

// fixtureOptions adjust a fixture's server.
type fixtureOptions func(*Options)

// buildFunc assembles an organism (not started) with the given options.
type buildFunc func(organism.Options) (*organism.Organism, error)

// helloWorld builds the repository's hello-world organism.
func helloWorld(o organism.Options) (*organism.Organism, error) {
	return organism.Load("../../organism.yaml", o)
}

// startOrganism assembles the durable hello-world organism in a temporary
// data directory, starts it and waits for the boot conversation.
func startOrganism(t *testing.T, logger *slog.Logger) *organism.Local {
	t.Helper()
	return startBuilt(t, logger, helloWorld)
}

// startBuilt is startOrganism for the organism build assembles.
func startBuilt(t *testing.T, logger *slog.Logger, build buildFunc) *organism.Local {
	t.Helper()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir := t.TempDir()
	l, err := organism.Assemble(organism.Options{Logger: logger, DataDir: dir}, build)
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	o := l.Organism()
	booted := make(chan string, 16)
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			select {
			case booted <- e.Conversation:
			default:
			}
		}
	}))
	defer stop()
	if err := o.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("organism shutdown: %v", err)
		}
	})
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case conv := <-booted:
			if conv == o.BootThread {
				return l
			}
		case <-timer.C:
			t.Fatal("boot did not complete")
		}
	}
}

// newFixture starts the organism, the auth service (cheap hashes, fake
// clock, 3 failures lock out) and the server.
func newFixture(t *testing.T, adjust ...fixtureOptions) *fixture {
	t.Helper()
	f := prepareFixture(t, adjust...)
	f.start(f.opts)
	return f
}

// newFixtureWith is newFixture over the organism build assembles.
func newFixtureWith(t *testing.T, build buildFunc, adjust ...fixtureOptions) *fixture {
	t.Helper()
	f := prepareFixtureWith(t, build, adjust...)
	f.start(f.opts)
	return f
}

// prepareFixture is newFixture without starting the server (f.opts holds
// its options).
func prepareFixture(t *testing.T, adjust ...fixtureOptions) *fixture {
	t.Helper()
	return prepareFixtureWith(t, helloWorld, adjust...)
}

// prepareFixtureWith is prepareFixture over the organism build assembles.
func prepareFixtureWith(t *testing.T, build buildFunc, adjust ...fixtureOptions) *fixture {
	t.Helper()
	logs := &records{}
	logger := slog.New(logs)
	l := startBuilt(t, logger, build)
	f := &fixture{t: t, local: l, org: l.Organism(), clock: authtest.NewClock(t0), logs: logs, build: build}
	svc, err := auth.New(f.org.Store(), auth.Options{Argon2: auth.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1},
		MaxFailures: 3, Clock: f.clock.Now, Logger: logger, Organism: f.org.Config.Organism.Name})
	if err != nil {
		t.Fatalf("auth: %v", err)
	}
	f.auth = svc
	cert, err := certs.SelfSigned(t.TempDir(), nil, time.Now)
	if err != nil {
		t.Fatalf("certificate: %v", err)
	}
	fp, err := certs.ParseFingerprint(certs.Fingerprint(cert))
	if err != nil {
		t.Fatal(err)
	}
	f.tls = certs.PinnedClientConfig(fp)
	opts := Options{TLS: certs.ServerConfig(cert), Auth: svc, Organism: f.org, Console: l, Logger: logger,
		WriteTimeout: 2 * time.Second}
	for _, a := range adjust {
		a(&opts)
	}
	f.opts = opts
	return f
}

// start builds the server with opts and serves it on 127.0.0.1:0.
func (f *fixture) start(opts Options) { f.startOn(opts, "127.0.0.1:0") }

// restart shuts the server down, runs down while it is down, and serves a
// new one with the same options on the same address, as a restarted
// organism's bus would be.
func (f *fixture) restart(down func()) {
	f.t.Helper()
	addr := strings.TrimPrefix(strings.TrimPrefix(f.base, "https://"), "http://")
	f.stop()
	down()
	f.startOn(f.opts, addr)
}

// startOn builds the server with opts and serves it on addr.
func (f *fixture) startOn(opts Options, addr string) {
	t := f.t
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("bus.New: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	if f.beforeServe != nil {
		f.beforeServe(srv)
	}
	scheme, wsScheme := "https", "wss"
	if opts.Insecure {
		scheme, wsScheme = "http", "ws"
	}
	f.base = scheme + "://" + ln.Addr().String()
	f.wsBase = wsScheme + "://" + ln.Addr().String()
	f.serveCh = make(chan error, 1)
	go func() { f.serveCh <- srv.Serve(ln) }()
	t.Cleanup(f.stop)
}

// stop shuts the server down (once) and checks Serve returned nil.
func (f *fixture) stop() {
	if f.serveCh == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		f.t.Errorf("shutdown: %v", err)
	}
	if err := <-f.serveCh; err != nil {
		f.t.Errorf("serve: %v", err)
	}
	f.serveCh = nil
}

// user creates a user with role and returns its TOTP secret.
func (f *fixture) user(name string, role auth.Role) string {
	f.t.Helper()
	u, err := f.auth.AddUser(context.Background(), name, password, role)
	if err != nil {
		f.t.Fatalf("add user: %v", err)
	}
	return authtest.Secret(f.t, u)
}

// loginAs creates a user with role and logs it in: the token.
func (f *fixture) loginAs(name string, role auth.Role) string {
	f.t.Helper()
	return f.login(name, f.user(name, role))
}

// code is the TOTP code of secret at the auth clock's current step; it
// moves the clock one step on so the next code is fresh.
func (f *fixture) code(secret string) string {
	f.t.Helper()
	c, err := totp.GenerateCode(secret, f.clock.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// nextStep advances the auth clock to the next TOTP step.
func (f *fixture) nextStep() { f.clock.Advance(30 * time.Second) }

// client is an HTTPS client pinned to the server's certificate.
func (f *fixture) client() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: f.tls.Clone()}, Timeout: waitTimeout}
}

// do sends a request with an optional bearer token and JSON body and
// returns the status and the decoded JSON body.
func (f *fixture) do(method, path, token string, body any) (int, map[string]any, http.Header) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			js, err := json.Marshal(b)
			if err != nil {
				f.t.Fatal(err)
			}
			rd = bytes.NewReader(js)
		}
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := f.client()
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	var out map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out); err != nil {
			f.t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
		}
	} else {
		out = map[string]any{"_raw": string(raw)}
	}
	return resp.StatusCode, out, resp.Header
}

// login logs name in with a fresh code and returns the token.
func (f *fixture) login(name, secret string) string {
	f.t.Helper()
	f.nextStep()
	status, body, _ := f.do("POST", "/auth/login", "", map[string]string{"username": name, "password": password,
		"totp": f.code(secret)})
	if status != http.StatusOK {
		f.t.Fatalf("login %s: %d %v", name, status, body)
	}
	return body["token"].(string)
}

// dial opens a WebSocket on path with the token in the Authorization
// header ("" for none).
func (f *fixture) dial(path, token string) *websocket.Conn {
	f.t.Helper()
	c, resp, err := f.tryDial(path, http.Header{"Authorization": {"Bearer " + token}}, token != "")
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		f.t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) tryDial(path string, h http.Header, withHeader bool) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{TLSClientConfig: f.tls.Clone(), HandshakeTimeout: waitTimeout}
	if !withHeader {
		h = nil
	}
	c, resp, err := d.Dial(f.wsBase+path, h)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return c, resp, err
}

// frame is a decoded JSON frame.
type frame map[string]any

// readMessage reads the next message (failing the test after waitTimeout).
func readMessage(t *testing.T, c *websocket.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return data
}

// readFrame reads the next JSON frame (failing the test after waitTimeout).
func readFrame(t *testing.T, c *websocket.Conn) frame {
	t.Helper()
	data := readMessage(t, c)
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("frame %q: %v", data, err)
	}
	return f
}

// writeFrame sends v as a JSON text frame.
func writeFrame(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	if err := c.WriteJSON(v); err != nil {
		t.Fatalf("write frame: %v", err)
	}
}

// closeError reads until the socket closes and returns the close error.
func closeError(t *testing.T, c *websocket.Conn) *websocket.CloseError {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce
		}
		t.Fatalf("socket ended without a close frame: %v", err)
	}
}

// envelope is a Greeting envelope from client to greeter on thread.
func envelope(from, thread, name string) string {
	return fmt.Sprintf(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>%s</from><to>greeter</to>`+
		`<thread>%s</thread></meta><Greeting xmlns=""><Name>%s</Name></Greeting></message>`, from, thread, name)
}
