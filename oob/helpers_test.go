package oob

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/xml"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// logBuf is a goroutine-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fixture is a started hello-world organism (durable, in a temp dir) and
// an OOB server over it.
type fixture struct {
	org     *organism.Organism
	srv     *Server
	owner   ed25519.PrivateKey
	logs    *logBuf
	now     atomic.Pointer[time.Time]
	stopped chan string
	level   *slog.LevelVar
	dir     string
	ids     atomic.Int64
	// printed receives what the hello-world printer prints ("from: text").
	printed chan string
}

// clock is the fixture's settable clock.
func (f *fixture) clock() time.Time { return *f.now.Load() }

func (f *fixture) advance(d time.Duration) {
	t := f.clock().Add(d)
	f.now.Store(&t)
}

func newFixture(t testing.TB, mutate func(*Options)) *fixture {
	t.Helper()
	return newFixtureFrom(t, "../organism.yaml", mutate)
}

// newFixtureFrom is newFixture over the organism file at path.
func newFixtureFrom(t testing.TB, path string, mutate func(*Options)) *fixture {
	t.Helper()
	f := &fixture{logs: &logBuf{}, stopped: make(chan string, 1), level: new(slog.LevelVar), dir: t.TempDir(),
		printed: make(chan string, 64)}
	now := time.Now()
	f.now.Store(&now)
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o, err := organism.Load(path, organism.Options{Logger: log, DataDir: filepath.Join(f.dir, "data"),
		Env: catalog.Env{Print: func(_, from, text string) {
			select {
			case f.printed <- from + ": " + text:
			default:
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	f.org = o
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f.owner = priv
	cfg := o.Config.OOB
	cfg.Port = 0
	cfg.UnixSocket = filepath.Join(f.dir, "run", "oob.sock")
	opts := Options{Config: cfg, Owner: pub, Logger: log, Clock: f.clock,
		Target: Target{Pump: o.Pump, Config: o.Config, Journal: o.Store(), LogLevel: f.level, Listeners: o,
			GatewayFile: filepath.Join(f.dir, "gateways.json"), ListenerFile: filepath.Join(f.dir, "listeners.json"),
			Stopper: StopperFunc(func(graceful bool, timeout time.Duration, reason string) {
				f.stopped <- reason
			})}}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	f.srv = srv
	return f
}

// sign builds a signed request at the fixture's clock.
func (f *fixture) sign(t *testing.T, id, op string) []byte {
	t.Helper()
	b, err := SignRequest(f.owner, id, f.clock(), []byte(op))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// do handles a signed request and returns the parsed, XSD-validated
// response.
func (f *fixture) do(t *testing.T, op string) *Response {
	t.Helper()
	return f.handle(t, f.sign(t, fmt.Sprintf("req-%d", f.ids.Add(1)), op))
}

// handle handles a raw request; the response must be valid.
func (f *fixture) handle(t *testing.T, raw []byte) *Response {
	t.Helper()
	out := f.srv.Handle(raw)
	return mustResponse(t, out)
}

// mustResponse validates a response document against the XSD and parses it.
func mustResponse(t *testing.T, out []byte) *Response {
	t.Helper()
	validDoc(t, out)
	var r Response
	if err := xml.Unmarshal(out, &r); err != nil {
		t.Fatalf("response does not parse: %v\n%s", err, out)
	}
	return &r
}

// validDoc fails unless b is valid against privileged-msg.xsd.
func validDoc(t *testing.T, b []byte) {
	t.Helper()
	s, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(b); err != nil {
		t.Fatalf("not valid against privileged-msg.xsd: %v\n%s", err, b)
	}
}

// code is the response's error code ("" for none).
func code(r *Response) string {
	if r.Payload.Error == nil {
		return ""
	}
	return r.Payload.Error.Code
}

// securityLogged reports whether a security event containing msg was logged.
func (f *fixture) securityLogged(msg string) bool {
	for _, line := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(line, `"security":true`) && strings.Contains(line, msg) && strings.Contains(line, `"level":"WARN"`) {
			return true
		}
	}
	return false
}
